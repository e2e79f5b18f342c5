/**
 * The wire API as @grpc/grpc-js needs it, built from the protobuf-es
 * descriptors generated from `proto/`: one method table for the server and
 * the client, messages (de)serialized by protobuf-es, so both sides stay
 * typed and the `.proto` files stay the single source of truth.
 */
import {
  create,
  fromBinary,
  toBinary,
  type DescMessage,
  type Message,
  type MessageInitShape,
  type MessageShape,
} from '@bufbuild/protobuf';
import { BinaryReader, BinaryWriter } from '@bufbuild/protobuf/wire';
import type { ServiceDefinition } from '@grpc/grpc-js';
import { ErrorCode, TelhaError } from '../core/errors.ts';
import { STREAM_CODECS, type MessageCodec } from '../gen/telha/v1/queue_hot_codecs.ts';
import { QueueService } from '../gen/telha/v1/queue_pb.ts';

export { QueueService };

type Methods = typeof QueueService.method;
/** The request/response calls (every method but the Work, Watch and Produce streams). */
export type MethodName = Exclude<keyof Methods, 'work' | 'watch' | 'produce'>;
/** The unary calls a Produce stream carries. */
export type ProduceMethod = 'enqueue' | 'enqueueBatch' | 'enqueueEach';
export type RequestOf<K extends MethodName> = MessageShape<Methods[K]['input']>;
export type RequestInitOf<K extends MethodName> = MessageInitShape<Methods[K]['input']>;
export type ResponseOf<K extends MethodName> = MessageShape<Methods[K]['output']>;
export type ResponseInitOf<K extends MethodName> = MessageInitShape<Methods[K]['output']>;

interface Codec<T> {
  serialize: (value: T | Uint8Array) => Buffer;
  deserialize: (bytes: Buffer) => T;
}

const asBuffer = (bytes: Uint8Array): Buffer =>
  Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

/** The largest message after which a codec keeps its writer's buffer for the next one. */
const KEPT_WRITER_BYTES = 64 * 1024;

/**
 * A codec from a generated encoder and decoder (`scripts/hot-codecs.ts`), wire-identical to
 * `toBinary` / `fromBinary` and the same message objects, without their by-name field access.
 */
function generatedCodec({ typeName, encode, decode }: MessageCodec): [string, Codec<Message>] {
  // One writer for every message (serializing is synchronous): its buffer is allocated and grown
  // once instead of per message. `finish()` copies the bytes out and resets it, after a throw too.
  let writer = new BinaryWriter();
  const codec: Codec<Message> = {
    serialize: (value) => {
      if (value instanceof Uint8Array) return asBuffer(value);
      try {
        encode(writer, value);
      } catch (error) {
        writer.finish();
        throw error;
      }
      const bytes = writer.finish();
      // A large message (a batch) leaves a large buffer behind: not kept for the small ones.
      if (bytes.byteLength > KEPT_WRITER_BYTES) writer = new BinaryWriter();
      return asBuffer(bytes);
    },
    deserialize: (bytes) => decode(new BinaryReader(bytes), bytes.byteLength),
  };
  return [typeName, codec];
}

/**
 * The messages of the Produce and Work streams, which every job crosses (each several times):
 * read and written by generated code, the rest by protobuf-es's reflection. Measured in
 * bench/RESULTS.md, issue 33, "Changes".
 */
const GENERATED_CODECS: ReadonlyMap<string, Codec<Message>> = new Map(STREAM_CODECS.map(generatedCodec));

function codec<D extends DescMessage>(schema: D): Codec<MessageShape<D>> {
  const generated = GENERATED_CODECS.get(schema.typeName);
  if (generated !== undefined) return generated as unknown as Codec<MessageShape<D>>;
  return {
    // Bytes are a message already encoded, written as they are: a Watch message is laid out from
    // events encoded once for all its watchers (`server/watch-messages.ts`).
    serialize: (value) => asBuffer(value instanceof Uint8Array ? value : toBinary(schema, value)),
    deserialize: (bytes) => fromBinary(schema, bytes),
  };
}

/**
 * A request the server could not decode (bytes that are not the message, a string field that is
 * not UTF-8). The server's deserializer hands this on instead of throwing: grpc-js answers a
 * throwing one with INTERNAL before any handler runs, so the call was neither refused as bad
 * input nor counted. Handlers refuse it with `error`, INVALID_ARGUMENT.
 */
export class UndecodableRequest {
  readonly error: TelhaError;

  constructor(schema: DescMessage, cause: unknown) {
    const why = cause instanceof Error ? cause.message : String(cause);
    this.error = new TelhaError(ErrorCode.InvalidArgument, `the request is not a valid ${schema.typeName}: ${why}`, {
      cause,
    });
  }
}

/** A request as the server's deserializer hands it on: the message, or why it is not one. */
export type Decoded<T> = T | UndecodableRequest;

/** `QueueService` as a grpc-js service definition, each request read by `decodeRequest`. */
function serviceDefinition(
  decodeRequest: (schema: DescMessage, decode: (bytes: Buffer) => unknown) => (bytes: Buffer) => unknown,
): ServiceDefinition {
  return Object.fromEntries(
    QueueService.methods.map((method) => {
      const input = codec(method.input);
      const output = codec(method.output);
      return [
        method.localName,
        {
          path: `/${QueueService.typeName}/${method.name}`,
          requestStream: method.methodKind === 'bidi_streaming' || method.methodKind === 'client_streaming',
          responseStream: method.methodKind === 'bidi_streaming' || method.methodKind === 'server_streaming',
          requestSerialize: input.serialize,
          requestDeserialize: decodeRequest(method.input, input.deserialize),
          responseSerialize: output.serialize,
          responseDeserialize: output.deserialize,
          originalName: method.name,
        },
      ];
    }),
  );
}

/**
 * `QueueService` as a grpc-js service definition, keyed by each method's local (camelCase) name:
 * the client's (the server's is {@link queueServerDefinition}).
 */
export const queueServiceDefinition: ServiceDefinition = serviceDefinition((_schema, decode) => decode);

/**
 * The server's `QueueService` definition: a request that does not decode reaches its handler as
 * an {@link UndecodableRequest} (a Work or Produce stream's message too), never as a throw.
 */
export const queueServerDefinition: ServiceDefinition = serviceDefinition((schema, decode) => (bytes) => {
  try {
    return decode(bytes);
  } catch (error) {
    return new UndecodableRequest(schema, error);
  }
});

/** A complete response message from a handler's partial one. */
export function responseOf<K extends MethodName>(method: K, init: ResponseInitOf<K>): ResponseOf<K> {
  const schema = QueueService.method[method].output as DescMessage;
  return create(schema, init as MessageInitShape<DescMessage>) as ResponseOf<K>;
}

/** A complete request message from a partial one. */
export function requestOf<K extends MethodName>(method: K, init: RequestInitOf<K>): RequestOf<K> {
  const schema = QueueService.method[method].input as DescMessage;
  return create(schema, init as MessageInitShape<DescMessage>) as RequestOf<K>;
}

/** gRPC status codes (the numbering every gRPC implementation shares). */
export const Status = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;
export type Status = (typeof Status)[keyof typeof Status];

/** Metadata keys carrying what a status code alone cannot. */
export const REASON_HEADER = 'telha-reason';
export const FIELD_HEADER = 'telha-field';
export const JOB_HEADER = 'telha-job-id';
/**
 * On a Work stream's response headers, sent as soon as the server has accepted the stream's
 * open (authenticated, authorized, admitted) and before any job: the worker knows it is
 * connected even while there is no work to push.
 */
export const WORK_OPEN_HEADER = 'telha-work-open';
/**
 * On a Produce stream's trailers when the server ended the stream itself: it answered every
 * request it took, so a request without an answer was not written and may be sent again.
 */
export const UNTAKEN_HEADER = 'telha-untaken';
/** On a Watch stream's error status, when the watcher may continue: pass it back as `resume_token`. */
export const RESUME_TOKEN_HEADER = 'telha-resume-token';

/** Messages up to this size are accepted: a batch of jobs can be far larger than one 1 MiB payload. */
export const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
