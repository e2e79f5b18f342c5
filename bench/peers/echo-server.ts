/**
 * The other end of the transport floor (bench/peers/floor.ts), in a process
 * of its own: echoes on raw TCP, on `node:http2` streams, and on a grpc-js
 * service with a bidi stream and a unary call, each on an ephemeral loopback
 * port, printed as one JSON line once all listen. Exits when stdin closes.
 */
import * as grpc from '@grpc/grpc-js';
import { createServer as createHttp2Server } from 'node:http2';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { ECHO_SERVICE } from './echo-service.ts';

const tcp = createTcpServer((socket) => {
  socket.setNoDelay(true);
  socket.pipe(socket);
});
await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));

const http2 = createHttp2Server();
http2.on('stream', (stream) => {
  stream.respond({ ':status': 200 });
  stream.pipe(stream);
});
await new Promise<void>((resolve) => http2.listen(0, '127.0.0.1', resolve));

const server = new grpc.Server();
server.addService(ECHO_SERVICE, {
  bidi: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
    call.on('data', (message: Buffer) => call.write(message));
    call.on('end', () => call.end());
  },
  unary: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) =>
    callback(null, call.request),
});
const grpcPort = await new Promise<number>((resolve, reject) =>
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, port) =>
    error ? reject(error) : resolve(port),
  ),
);

process.stdout.write(
  `${JSON.stringify({
    tcp: (tcp.address() as AddressInfo).port,
    http2: (http2.address() as AddressInfo).port,
    grpc: grpcPort,
  })}\n`,
);
process.stdin.resume();
process.stdin.on('end', () => {
  tcp.close();
  http2.close();
  server.forceShutdown();
  process.exit(0);
});
