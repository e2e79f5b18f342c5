/**
 * Writes `src/gen/telha/v1/queue_hot_codecs.ts`: an encoder and a decoder per message of the
 * streams every job crosses (Produce and Work), generated from the protobuf-es descriptors.
 *
 * Why: `toBinary` / `fromBinary` walk a message by its descriptor and read and write its fields
 * by name (`message[localName]`), generic and megamorphic property access at every field; with
 * one function per message the fields are named in the code and the accesses are monomorphic
 * (bench/RESULTS.md, issue 33, "Changes"). The varint, length and UTF-8 work stays the library's
 * (`@bufbuild/protobuf/wire`'s `BinaryWriter` / `BinaryReader`); only the field walk is
 * generated, and it does what `toBinary` / `fromBinary` do, field for field:
 *
 * - encode: fields in field-number order (a oneof's members among them), implicit-presence
 *   fields only when not zero, explicit ones when set, then `$unknown` as it is;
 * - decode: the object `create()` makes (same properties, same `$typeName`, oneofs as
 *   `{ case: undefined }`), then every record in wire order: a scalar's last value wins, a
 *   message field seen again merges into the one read before, a field this schema does not
 *   know is kept in `$unknown`; a scalar is read as its type whatever the record's wire type,
 *   as `fromBinary` reads it.
 *
 * The generator refuses any field it has not been written for (maps, groups, packed lists,
 * floating point, closed enums, 64-bit integers as strings): a `.proto` change that brings one
 * into these messages fails `npm run generate`, not a client. `test/wire/hot-codecs.test.ts`
 * checks the file is what this writes, and that both agree with protobuf-es byte for byte.
 *
 *   node --import tsx scripts/hot-codecs.ts    (run by `npm run generate`)
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ScalarType, type DescField, type DescMessage } from '@bufbuild/protobuf';
import { FeatureSet_FieldPresence } from '@bufbuild/protobuf/wkt';
import { QueueService } from '../src/gen/telha/v1/queue_pb.ts';

/** Where the generated module lives, beside the code buf generates. */
export const HOT_CODECS_PATH = fileURLToPath(new URL('../src/gen/telha/v1/queue_hot_codecs.ts', import.meta.url));

/** The messages every job crosses: a Produce stream's and a Work stream's, both ways. */
const ROOTS: readonly DescMessage[] = [
  QueueService.method.produce.input,
  QueueService.method.produce.output,
  QueueService.method.work.input,
  QueueService.method.work.output,
];

const WIRE_VARINT = 0;
const WIRE_BIT64 = 1;
const WIRE_LENGTH_DELIMITED = 2;
const WIRE_BIT32 = 5;

interface Scalar {
  /** The `BinaryWriter` / `BinaryReader` method. */
  readonly method: string;
  readonly wireType: number;
  /** The zero value `create()` sets, as code. */
  readonly zero: string;
  /** An implicit-presence field is written when this holds (`v` is the value). */
  readonly notZero: (v: string) => string;
}

const numeric = (method: string, wireType: number): Scalar => ({
  method,
  wireType,
  zero: '0',
  notZero: (v) => `${v} !== 0`,
});
const long = (method: string, wireType: number): Scalar => ({
  method,
  wireType,
  zero: '0n',
  notZero: (v) => `${v} !== 0n`,
});

const SCALARS: ReadonlyMap<ScalarType, Scalar> = new Map([
  [ScalarType.STRING, { method: 'string', wireType: WIRE_LENGTH_DELIMITED, zero: "''", notZero: (v) => `${v} !== ''` }],
  [
    ScalarType.BYTES,
    {
      method: 'bytes',
      wireType: WIRE_LENGTH_DELIMITED,
      zero: 'new Uint8Array(0)',
      notZero: (v) => `${v}.byteLength > 0`,
    },
  ],
  [ScalarType.BOOL, { method: 'bool', wireType: WIRE_VARINT, zero: 'false', notZero: (v) => v }],
  [ScalarType.INT32, numeric('int32', WIRE_VARINT)],
  [ScalarType.UINT32, numeric('uint32', WIRE_VARINT)],
  [ScalarType.SINT32, numeric('sint32', WIRE_VARINT)],
  [ScalarType.FIXED32, numeric('fixed32', WIRE_BIT32)],
  [ScalarType.SFIXED32, numeric('sfixed32', WIRE_BIT32)],
  [ScalarType.INT64, long('int64', WIRE_VARINT)],
  [ScalarType.UINT64, long('uint64', WIRE_VARINT)],
  [ScalarType.SINT64, long('sint64', WIRE_VARINT)],
  [ScalarType.FIXED64, long('fixed64', WIRE_BIT64)],
  [ScalarType.SFIXED64, long('sfixed64', WIRE_BIT64)],
]);
const ENUM: Scalar = numeric('int32', WIRE_VARINT);

function unsupported(field: DescField, why: string): never {
  throw new Error(`scripts/hot-codecs.ts has no code for ${field.toString()}: ${why}`);
}

/** How a scalar or enum field (or list item) is written and read. */
function scalarOf(field: DescField): Scalar {
  if (field.fieldKind === 'enum' || (field.fieldKind === 'list' && field.listKind === 'enum')) {
    if (!field.enum.open) unsupported(field, 'a closed enum');
    return ENUM;
  }
  if (field.fieldKind !== 'scalar' && !(field.fieldKind === 'list' && field.listKind === 'scalar')) {
    return unsupported(field, 'not a scalar');
  }
  if (field.longAsString) unsupported(field, '64-bit integers as strings');
  return SCALARS.get(field.scalar) ?? unsupported(field, 'a floating-point number');
}

/** The read call for a scalar, as `fromBinary` makes it (strings validated as the field says). */
function readScalar(field: DescField, scalar: Scalar): string {
  if (scalar.method === 'string') return `r.string(${String(field.utf8Validation)})`;
  // BinaryReader types a 64-bit integer as `bigint | string` (a string only where BigInt is missing).
  return scalar.zero === '0n' ? `(r.${scalar.method}() as bigint)` : `r.${scalar.method}()`;
}

const tagOf = (field: DescField, wireType: number): number => ((field.number << 3) | wireType) >>> 0;

/** Every message the roots reach through their message fields, each once, roots first. */
function reachable(roots: readonly DescMessage[]): DescMessage[] {
  const seen = new Map<string, DescMessage>();
  const visit = (message: DescMessage): void => {
    if (seen.has(message.typeName)) return;
    seen.set(message.typeName, message);
    for (const field of message.fields) {
      if (field.fieldKind === 'map') unsupported(field, 'a map');
      if (field.fieldKind === 'message' || (field.fieldKind === 'list' && field.listKind === 'message')) {
        if (field.delimitedEncoding) unsupported(field, 'the delimited (group) encoding');
        visit(field.message);
      }
    }
  };
  for (const root of roots) visit(root);
  return [...seen.values()];
}

/** The TypeScript name protobuf-es gives a message (nested ones joined by `_`). */
function typeNameOf(message: DescMessage): string {
  const prefix = `${message.file.proto.package}.`;
  return message.typeName.slice(prefix.length).replaceAll('.', '_');
}

function encoderOf(message: DescMessage): string[] {
  const type = typeNameOf(message);
  const lines = [`export function encode${type}(w: BinaryWriter, m: ${type}): void {`];
  for (const field of [...message.fields].sort((a, b) => a.number - b.number)) {
    const name = field.localName;
    const writeMessage = (value: string, child: DescMessage): string =>
      `w.uint32(${tagOf(field, WIRE_LENGTH_DELIMITED)}).fork(); encode${typeNameOf(child)}(w, ${value}); w.join();`;
    if (field.oneof !== undefined) {
      const oneof = `m.${field.oneof.localName}`;
      const write =
        field.fieldKind === 'message'
          ? writeMessage(`${oneof}.value`, field.message)
          : `w.uint32(${tagOf(field, scalarOf(field).wireType)}).${scalarOf(field).method}(${oneof}.value);`;
      lines.push(`  if (${oneof}.case === '${name}') { ${write} }`);
      continue;
    }
    switch (field.fieldKind) {
      case 'message':
        lines.push(`  if (m.${name} !== undefined) { ${writeMessage(`m.${name}`, field.message)} }`);
        break;
      case 'list':
        if (field.listKind === 'message') {
          lines.push(`  for (const item of m.${name}) { ${writeMessage('item', field.message)} }`);
        } else {
          const scalar = scalarOf(field);
          if (field.packed) unsupported(field, 'a packed list');
          lines.push(
            `  for (const item of m.${name}) w.uint32(${tagOf(field, scalar.wireType)}).${scalar.method}(item);`,
          );
        }
        break;
      case 'scalar':
      case 'enum': {
        const scalar = scalarOf(field);
        const when =
          field.presence === FeatureSet_FieldPresence.IMPLICIT
            ? scalar.notZero(`m.${name}`)
            : `m.${name} !== undefined`;
        lines.push(`  if (${when}) w.uint32(${tagOf(field, scalar.wireType)}).${scalar.method}(m.${name});`);
        break;
      }
      case 'map':
        unsupported(field, 'a map');
    }
  }
  lines.push('  if (m.$unknown !== undefined) for (const u of m.$unknown) w.tag(u.no, u.wireType).raw(u.data);', '}');
  return lines;
}

/** The properties `create()` gives a message with no fields set, in its member order. */
function zeroOf(message: DescMessage): string {
  const properties = [`$typeName: '${message.typeName}'`];
  for (const member of message.members) {
    if (member.kind === 'oneof') {
      properties.push(`${member.localName}: { case: undefined }`);
    } else if (member.fieldKind === 'list') {
      properties.push(`${member.localName}: []`);
    } else if (member.fieldKind !== 'message' && member.presence === FeatureSet_FieldPresence.IMPLICIT) {
      properties.push(`${member.localName}: ${scalarOf(member).zero}`);
    }
  }
  return `{ ${properties.join(', ')} }`;
}

function decoderOf(message: DescMessage): string[] {
  const type = typeNameOf(message);
  const lines = [
    `export function decode${type}(r: BinaryReader, length: number, into?: ${type}): ${type} {`,
    `  const m: ${type} = into ?? ${zeroOf(message)};`,
    '  let unknown = m.$unknown;',
    '  const end = r.pos + length;',
    '  while (r.pos < end) {',
    '    const [no, wireType] = r.tag();',
    '    switch (no) {',
  ];
  for (const field of message.fields) {
    const name = field.localName;
    let read: string;
    if (field.oneof !== undefined) {
      const oneof = `m.${field.oneof.localName}`;
      const value =
        field.fieldKind === 'message'
          ? `decode${typeNameOf(field.message)}(r, r.uint32(), ${oneof}.case === '${name}' ? ${oneof}.value : undefined)`
          : readScalar(field, scalarOf(field));
      read = `${oneof} = { case: '${name}', value: ${value} };`;
    } else if (field.fieldKind === 'message') {
      read = `m.${name} = decode${typeNameOf(field.message)}(r, r.uint32(), m.${name});`;
    } else if (field.fieldKind === 'list') {
      read =
        field.listKind === 'message'
          ? `m.${name}.push(decode${typeNameOf(field.message)}(r, r.uint32()));`
          : `m.${name}.push(${readScalar(field, scalarOf(field))});`;
      // A packed list of numbers may arrive packed or not, whatever the .proto says.
      if (field.listKind !== 'message' && scalarOf(field).wireType !== WIRE_LENGTH_DELIMITED) {
        unsupported(field, 'a list of numbers (packed or not on the wire)');
      }
    } else {
      read = `m.${name} = ${readScalar(field, scalarOf(field))};`;
    }
    lines.push(`      case ${field.number}: ${read} break;`);
  }
  lines.push(
    '      default: (unknown ??= []).push({ no, wireType, data: r.skip(wireType, no) });',
    '    }',
    '  }',
    '  if (unknown !== undefined && unknown.length > 0) m.$unknown = unknown;',
    '  return m;',
    '}',
  );
  return lines;
}

/** The generated module's text. */
export function hotCodecsSource(): string {
  const messages = reachable(ROOTS);
  const types = messages.map(typeNameOf).sort();
  return [
    '// @generated by scripts/hot-codecs.ts from the descriptors in queue_pb.ts: do not edit.',
    '// Run `npm run generate` after a change to proto/. Why these exist: see the script.',
    "import type { Message } from '@bufbuild/protobuf';",
    "import type { BinaryReader, BinaryWriter } from '@bufbuild/protobuf/wire';",
    `import type { ${types.join(', ')} } from './queue_pb.ts';`,
    '',
    '/** An encoder and a decoder of one message. */',
    'export interface MessageCodec<T extends Message = Message> {',
    '  readonly typeName: string;',
    '  encode(this: void, writer: BinaryWriter, message: T): void;',
    '  decode(this: void, reader: BinaryReader, length: number): T;',
    '}',
    '',
    "/** The codecs of the streams' own messages (the others are reached through them). */",
    'export const STREAM_CODECS: readonly MessageCodec[] = [',
    ...ROOTS.map((root) => {
      const type = typeNameOf(root);
      return `  { typeName: '${root.typeName}', encode: encode${type}, decode: decode${type} },`;
    }),
    '];',
    ...messages.flatMap((message) => ['', ...encoderOf(message), '', ...decoderOf(message)]),
    '',
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(HOT_CODECS_PATH, hotCodecsSource());
  console.log(`wrote ${HOT_CODECS_PATH}`);
}
