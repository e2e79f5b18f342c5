import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import {
  create,
  fromBinary,
  ScalarType,
  toBinary,
  type DescField,
  type DescMessage,
  type Message,
  type MessageInitShape,
} from '@bufbuild/protobuf';
import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import fc from 'fast-check';
import { HOT_CODECS_PATH, hotCodecsSource } from '../../scripts/hot-codecs.ts';
import { STREAM_CODECS, type MessageCodec } from '../../src/gen/telha/v1/queue_hot_codecs.ts';
import {
  ProduceRequestSchema,
  QueueService,
  WorkRequestSchema,
  WorkResponseSchema,
} from '../../src/gen/telha/v1/queue_pb.ts';
import { queueServerDefinition, queueServiceDefinition } from '../../src/wire/service.ts';

interface Generated extends MessageCodec {
  readonly schema: DescMessage;
}

/** The streams' messages, each with its generated codec. */
const GENERATED: readonly Generated[] = [
  QueueService.method.produce.input,
  QueueService.method.produce.output,
  QueueService.method.work.input,
  QueueService.method.work.output,
].map((schema) => {
  const codec = STREAM_CODECS.find(({ typeName }) => typeName === schema.typeName);
  assert.ok(codec, `no generated codec for ${schema.typeName}`);
  return { schema, ...codec };
});

const INT64 = 2n ** 63n;
/** Any text: UTF-16 code units (lone surrogates too, which both sides write as U+FFFD) and whole code points. */
const text = fc.oneof(fc.string({ maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 12 }));

function scalarValue(type: ScalarType): fc.Arbitrary<unknown> {
  switch (type) {
    case ScalarType.STRING:
      return text;
    case ScalarType.BYTES:
      return fc.uint8Array({ maxLength: 12 });
    case ScalarType.BOOL:
      return fc.boolean();
    case ScalarType.UINT32:
      return fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 0xffff_ffff }));
    case ScalarType.INT32:
      return fc.oneof(fc.constant(0), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }));
    case ScalarType.INT64:
      return fc.oneof(fc.constant(0n), fc.bigInt({ min: -INT64, max: INT64 - 1n }));
    case ScalarType.UINT64:
      return fc.oneof(fc.constant(0n), fc.bigInt({ min: 0n, max: 2n * INT64 - 1n }));
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
    case ScalarType.FIXED32:
    case ScalarType.SFIXED32:
    case ScalarType.SINT32:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
    case ScalarType.SINT64:
      throw new Error(`no arbitrary for scalar type ${type}: add one with the field that needs it`);
  }
}

function fieldValue(field: DescField, depth: number): fc.Arbitrary<unknown> {
  switch (field.fieldKind) {
    case 'scalar':
      return scalarValue(field.scalar);
    case 'enum':
      // Open enums carry numbers the schema does not name as well.
      return fc.oneof(
        fc.constantFrom(...field.enum.values.map((value) => value.number)),
        fc.integer({ min: -9, max: 99 }),
      );
    case 'message':
      return initOf(field.message, depth + 1);
    case 'list': {
      const item =
        field.listKind === 'message'
          ? initOf(field.message, depth + 1)
          : field.listKind === 'enum'
            ? fc.integer({ min: 0, max: 3 })
            : scalarValue(field.scalar);
      return fc.array(item, { maxLength: depth < 2 ? 3 : 1 });
    }
    case 'map':
      throw new Error(`no arbitrary for the map ${field.toString()}`);
  }
}

/** Fields this schema does not know, as `fromBinary` keeps them in `$unknown` (no, wire type, the bytes after the tag). */
const unknownFields = fc.array(
  fc.oneof(
    fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map((value) => ({
      wireType: WireType.Varint,
      data: new BinaryWriter().uint64(value).finish(),
    })),
    fc.uint8Array({ maxLength: 6 }).map((bytes) => ({
      wireType: WireType.LengthDelimited,
      data: new BinaryWriter().bytes(bytes).finish(),
    })),
    fc.integer({ min: 0, max: 0xffff_ffff }).map((value) => ({
      wireType: WireType.Bit32,
      data: new BinaryWriter().fixed32(value).finish(),
    })),
    fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map((value) => ({
      wireType: WireType.Bit64,
      data: new BinaryWriter().fixed64(value).finish(),
    })),
  ),
  { maxLength: 2 },
);

/** A message of `schema` with any subset of its fields set, any of its oneofs' cases, unknown fields or not. */
function initOf(schema: DescMessage, depth = 0): fc.Arbitrary<Message> {
  const members: Record<string, fc.Arbitrary<unknown>> = {};
  for (const member of schema.members) {
    if (member.kind === 'oneof') {
      members[member.localName] = fc.oneof(
        fc.constant({ case: undefined }),
        ...member.fields.map((field) => fieldValue(field, depth).map((value) => ({ case: field.localName, value }))),
      );
    } else {
      members[member.localName] = fieldValue(member, depth);
    }
  }
  const firstUnknown = Math.max(...schema.fields.map((field) => field.number)) + 1;
  return fc.record(members, { requiredKeys: [] }).chain((init) =>
    unknownFields.map((unknown) => {
      const message = create(schema, init as MessageInitShape<DescMessage>);
      if (unknown.length > 0) message.$unknown = unknown.map((field, i) => ({ no: firstUnknown + i * 7, ...field }));
      return message;
    }),
  );
}

const encoded = ({ encode }: Generated, message: Message): Uint8Array => {
  const writer = new BinaryWriter();
  encode(writer, message);
  return writer.finish();
};
const decoded = ({ decode }: Generated, bytes: Uint8Array): Message =>
  decode(new BinaryReader(bytes), bytes.byteLength);

/** The top-level records of a message's bytes, each with its tag. */
function recordsOf(bytes: Uint8Array): Uint8Array[] {
  const reader = new BinaryReader(bytes);
  const records: Uint8Array[] = [];
  while (reader.pos < reader.len) {
    const start = reader.pos;
    const [no, wireType] = reader.tag();
    reader.skip(wireType, no);
    records.push(bytes.subarray(start, reader.pos));
  }
  return records;
}

/** What decoding gives, or that it threw: the two decoders must agree on both. */
function outcome(decode: () => Message): { message: Message } | { threw: true } {
  try {
    return { message: decode() };
  } catch {
    return { threw: true };
  }
}

describe('the generated codecs of the Produce and Work streams', () => {
  it('are what scripts/hot-codecs.ts writes from the descriptors (run npm run generate after a proto change)', () => {
    assert.equal(readFileSync(HOT_CODECS_PATH, 'utf8'), hotCodecsSource());
  });

  for (const generated of GENERATED) {
    const { schema } = generated;
    describe(schema.typeName, () => {
      it('encodes any message to the bytes toBinary writes', () => {
        fc.assert(
          fc.property(initOf(schema), (message) => {
            assert.deepEqual(encoded(generated, message), toBinary(schema, message));
          }),
        );
      });

      it("decodes toBinary's bytes to the object fromBinary makes, and fromBinary reads its own bytes back", () => {
        fc.assert(
          fc.property(initOf(schema), (message) => {
            const expected = fromBinary(schema, toBinary(schema, message));
            assert.deepStrictEqual(decoded(generated, toBinary(schema, message)), expected);
            assert.deepStrictEqual(fromBinary(schema, encoded(generated, message)), expected);
            assert.deepStrictEqual(decoded(generated, encoded(generated, message)), expected);
          }),
        );
      });

      it('reads records out of order and repeated as fromBinary does (last scalar wins, messages merge, lists append)', () => {
        fc.assert(
          fc.property(initOf(schema), initOf(schema), fc.array(fc.nat(), { maxLength: 12 }), (a, b, picks) => {
            const records = [...recordsOf(toBinary(schema, a)), ...recordsOf(toBinary(schema, b))];
            if (records.length === 0) return;
            const bytes = Buffer.concat(picks.map((pick) => records[pick % records.length] ?? new Uint8Array(0)));
            assert.deepStrictEqual(decoded(generated, bytes), fromBinary(schema, bytes));
          }),
        );
      });

      it('refuses what fromBinary refuses and reads what it reads, from any bytes', () => {
        fc.assert(
          fc.property(fc.uint8Array({ maxLength: 40 }), (bytes) => {
            assert.deepStrictEqual(
              outcome(() => decoded(generated, bytes)),
              outcome(() => fromBinary(schema, bytes)),
            );
          }),
        );
      });
    });
  }

  it('refuses a string that is not UTF-8, so the server answers INVALID_ARGUMENT as before', () => {
    // ProduceRequest { single { job { kind: 0xff } } }: field 2 (single) > field 2 (job) > field 1 (kind).
    const bytes = Buffer.from([0x12, 0x05, 0x12, 0x03, 0x0a, 0x01, 0xff]);
    assert.throws(() => fromBinary(ProduceRequestSchema, bytes));
    assert.throws(() => decoded(GENERATED[0] as Generated, bytes));
    const deserialize = queueServerDefinition['produce']?.requestDeserialize;
    assert.equal((deserialize?.(bytes) as { constructor: { name: string } }).constructor.name, 'UndecodableRequest');
  });

  it('writes a message whole after one that failed halfway through (the writer is reused)', () => {
    const serialize = queueServerDefinition['work']?.responseSerialize;
    const bad = create(WorkResponseSchema, { settleId: 1n, completeOutcomes: [{ message: 'half', code: 0 }] });
    const outcome = bad.completeOutcomes[0];
    if (outcome !== undefined) outcome.code = -1; // not a uint32: the writer throws inside the item
    assert.throws(() => serialize?.(bad));
    const good = create(WorkResponseSchema, { settleId: 2n, completeOutcomes: [{ code: 10, reason: 'cancelled' }] });
    assert.deepEqual(serialize?.(good), Buffer.from(toBinary(WorkResponseSchema, good)));
    const large = create(WorkResponseSchema, { jobs: [{ jobId: 'j', payload: new Uint8Array(100_000).fill(7) }] });
    assert.deepEqual(serialize?.(large), Buffer.from(toBinary(WorkResponseSchema, large)));
    assert.deepEqual(serialize?.(good), Buffer.from(toBinary(WorkResponseSchema, good)));
  });

  it('the service definition writes and reads a Work message as protobuf-es does', () => {
    const message = create(WorkRequestSchema, { credit: 3, settleId: 7n, releases: [{ fence: { jobId: 'j' } }] });
    const work = queueServiceDefinition['work'];
    assert.deepEqual(work?.requestSerialize(message), Buffer.from(toBinary(WorkRequestSchema, message)));
    assert.deepStrictEqual(
      work?.requestDeserialize(Buffer.from(toBinary(WorkRequestSchema, message))),
      fromBinary(WorkRequestSchema, Buffer.from(toBinary(WorkRequestSchema, message))),
    );
  });
});
