/** A grpc-js service of raw bytes, both ends of bench/peers/floor.ts's gRPC echoes: no protobuf, only the transport. */
import type * as grpc from '@grpc/grpc-js';

const bytes = {
  requestSerialize: (value: Buffer): Buffer => value,
  requestDeserialize: (value: Buffer): Buffer => value,
  responseSerialize: (value: Buffer): Buffer => value,
  responseDeserialize: (value: Buffer): Buffer => value,
};

export const ECHO_SERVICE = {
  bidi: { path: '/bench.Echo/Bidi', requestStream: true, responseStream: true, ...bytes },
  unary: { path: '/bench.Echo/Unary', requestStream: false, responseStream: false, ...bytes },
} satisfies grpc.ServiceDefinition;
