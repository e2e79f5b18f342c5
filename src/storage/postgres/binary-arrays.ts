/**
 * Array parameters in PostgreSQL's binary format (what `array_recv` reads), for the statements
 * that write many rows through `unnest($n::type[])`.
 *
 * node-postgres sends an array parameter as text: each bytea element hex-encoded and quoted, the
 * whole string scanned again for its UTF-8 length, then parsed back by PostgreSQL's `array_in`
 * and `byteain`. For the job records of a batch that was a tenth of a PostgreSQL server's CPU
 * in a drain. A `Buffer` parameter goes as binary instead (node-postgres sends its bytes as they
 * are, format 1), so these build the array's bytes themselves: a header (one dimension, whether
 * any element is NULL, the element type's OID, the length, lower bound 1), then each element as
 * its length (-1 for NULL) and its bytes in the type's binary form.
 *
 * The statement must name the array type (`$1::bytea[]`): PostgreSQL checks the element OID
 * written here against it and refuses a mismatch.
 */

/** Element type OIDs (`pg_type.oid`), fixed since PostgreSQL's first releases. */
const BYTEA = 17;
const INT8 = 20;
const INT2 = 21;
const TEXT = 25;
const UUID = 2950;

const HEADER = 20;
const NULL_LENGTH = -1;

/** One array's bytes: the header, then `write` fills the elements from `HEADER` on. */
function arrayOf(
  elementType: number,
  count: number,
  hasNull: boolean,
  elementsSize: number,
  write: (buffer: Buffer, offset: number) => number,
): Buffer {
  const buffer = Buffer.allocUnsafe(HEADER + elementsSize);
  buffer.writeInt32BE(1, 0); // dimensions
  buffer.writeInt32BE(hasNull ? 1 : 0, 4);
  buffer.writeInt32BE(elementType, 8);
  buffer.writeInt32BE(count, 12);
  buffer.writeInt32BE(1, 16); // lower bound
  const end = write(buffer, HEADER);
  if (end !== buffer.length) throw new Error(`binary array: wrote ${end} of ${buffer.length} bytes`);
  return buffer;
}

export function byteaArray(values: readonly (Buffer | null)[]): Buffer {
  let size = 0;
  let hasNull = false;
  for (const value of values) {
    if (value === null) hasNull = true;
    size += 4 + (value?.length ?? 0);
  }
  return arrayOf(BYTEA, values.length, hasNull, size, (buffer, start) => {
    let offset = start;
    for (const value of values) {
      offset = buffer.writeInt32BE(value === null ? NULL_LENGTH : value.length, offset);
      if (value !== null) offset += value.copy(buffer, offset);
    }
    return offset;
  });
}

export function textArray(values: readonly (string | null)[]): Buffer {
  let size = 0;
  let hasNull = false;
  const lengths = values.map((value) => {
    if (value === null) {
      hasNull = true;
      size += 4;
      return NULL_LENGTH;
    }
    const length = Buffer.byteLength(value, 'utf8');
    size += 4 + length;
    return length;
  });
  return arrayOf(TEXT, values.length, hasNull, size, (buffer, start) => {
    let offset = start;
    values.forEach((value, i) => {
      offset = buffer.writeInt32BE(lengths[i] ?? NULL_LENGTH, offset);
      if (value !== null) offset += buffer.write(value, offset, 'utf8');
    });
    return offset;
  });
}

/** bigint[] of safe integers (times in µs, deadlines); NULL for `null`. */
export function int8Array(values: readonly (number | null)[]): Buffer {
  let hasNull = false;
  for (const value of values) {
    if (value === null) hasNull = true;
    else if (!Number.isSafeInteger(value)) throw new Error(`binary array: ${value} is not a safe integer`);
  }
  const size = values.reduce<number>((sum, value) => sum + (value === null ? 4 : 12), 0);
  return arrayOf(INT8, values.length, hasNull, size, (buffer, start) => {
    let offset = start;
    for (const value of values) {
      if (value === null) {
        offset = buffer.writeInt32BE(NULL_LENGTH, offset);
        continue;
      }
      offset = buffer.writeInt32BE(8, offset);
      // Two's complement in two halves: the high word by floor division, the low word the rest.
      const high = Math.floor(value / 0x1_0000_0000);
      offset = buffer.writeInt32BE(high, offset);
      offset = buffer.writeUInt32BE(value - high * 0x1_0000_0000, offset);
    }
    return offset;
  });
}

/** smallint[]: states and priorities. */
export function int2Array(values: readonly number[]): Buffer {
  for (const value of values) {
    if (!Number.isInteger(value) || value < -32_768 || value > 32_767) {
      throw new Error(`binary array: ${value} is not a smallint`);
    }
  }
  return arrayOf(INT2, values.length, false, values.length * 6, (buffer, start) => {
    let offset = start;
    for (const value of values) {
      offset = buffer.writeInt32BE(2, offset);
      offset = buffer.writeInt16BE(value, offset);
    }
    return offset;
  });
}

/** Each ASCII character's value as a hex digit, -1 for any other character. */
const HEX_DIGIT = new Int8Array(128).fill(-1);
for (let digit = 0; digit < 16; digit++) {
  HEX_DIGIT[digit.toString(16).charCodeAt(0)] = digit;
  HEX_DIGIT[digit.toString(16).toUpperCase().charCodeAt(0)] = digit;
}
const DASH = 0x2d;

/**
 * uuid[] from their text form (`8-4-4-4-12` hex digits, either case); anything else throws,
 * where hex decoding by `Buffer.write` would stop short silently. Decoded digit by digit: a
 * regular expression and `Buffer.write` per group showed in a drain's profile of the server
 * (bench/RESULTS.md, "The measurements behind the code's choices").
 */
export function uuidArray(values: readonly string[]): Buffer {
  return arrayOf(UUID, values.length, false, values.length * 20, (buffer, start) => {
    let offset = start;
    for (const value of values) {
      offset = buffer.writeInt32BE(16, offset);
      if (!writeUuid(value, buffer, offset)) throw new Error(`binary array: ${JSON.stringify(value)} is not a UUID`);
      offset += 16;
    }
    return offset;
  });
}

/** The 16 bytes of `value` at `offset`; `false` if it is not a UUID's text. */
function writeUuid(value: string, buffer: Buffer, offset: number): boolean {
  if (value.length !== 36) return false;
  let at = offset;
  for (let i = 0; i < 36; i += 2) {
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (value.charCodeAt(i) !== DASH) return false;
      i -= 1; // the dash takes one character, not two
      continue;
    }
    const high = HEX_DIGIT[value.charCodeAt(i)] ?? -1;
    const low = HEX_DIGIT[value.charCodeAt(i + 1)] ?? -1;
    if (high < 0 || low < 0) return false;
    buffer[at++] = (high << 4) | low;
  }
  return at === offset + 16;
}

/** How a statement's array parameters travel: built here in binary, or as node-postgres sends arrays. */
export interface ArrayParameters {
  bytea(values: readonly (Buffer | null)[]): unknown;
  text(values: readonly (string | null)[]): unknown;
  int8(values: readonly (number | null)[]): unknown;
  int2(values: readonly number[]): unknown;
  uuid(values: readonly string[]): unknown;
}

/** For the store's own connections (node-postgres's JavaScript client, which sends a `Buffer` as binary). */
export const BINARY_ARRAYS: ArrayParameters = {
  bytea: byteaArray,
  text: textArray,
  int8: int8Array,
  int2: int2Array,
  uuid: uuidArray,
};

/**
 * For an application's connection (transactional enqueue): the arrays as they are, which
 * node-postgres sends as text. Its native client (pg-native) cannot send a parameter as binary.
 */
export const TEXT_ARRAYS: ArrayParameters = {
  bytea: (values) => values,
  text: (values) => values,
  int8: (values) => values,
  int2: (values) => values,
  uuid: (values) => values,
};
