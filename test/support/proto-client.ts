/**
 * A gRPC client as any language could build it from `queue.proto` alone: grpc-js and
 * proto-loader read the file at run time, with no generated code and none of the SDK. Untyped by
 * design, which is the point of the tests that use it.
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const QUEUE_PROTO = fileURLToPath(new URL('../../proto/telha/v1/queue.proto', import.meta.url));

/**
 * A `QueueService` client of `address`, without credentials, its messages decoded with the field
 * names as written, 64-bit integers and enums as strings, and defaults filled in; `oneofs` also
 * names which field of each oneof is set.
 */
export function queueServiceFromProto(address: string, options: { readonly oneofs?: boolean } = {}): grpc.Client {
  const definition = protoLoader.loadSync(QUEUE_PROTO, {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    ...(options.oneofs === true ? { oneofs: true } : {}),
  });
  const telha = grpc.loadPackageDefinition(definition)['telha'] as grpc.GrpcObject;
  const service = (telha['v1'] as grpc.GrpcObject)['QueueService'] as grpc.ServiceClientConstructor;
  return new service(address, grpc.credentials.createInsecure());
}
