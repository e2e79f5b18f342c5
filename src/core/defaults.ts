/** Defaults the server and its clients must agree on without loading the whole configuration schema. */

/** Where `telha serve` listens for gRPC, and where clients look for it, unless told otherwise. */
export const DEFAULT_ADDRESS = '127.0.0.1:7070';

/** Where `telha serve` listens for HTTP (health checks, `/metrics`, the dashboard) unless told otherwise. */
export const DEFAULT_HTTP_ADDRESS = '127.0.0.1:7071';
