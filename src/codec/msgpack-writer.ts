/**
 * A msgpack writer for records of a shape known in advance: the caller writes
 * each field's key and value in order, and the bytes are those msgpackr's
 * generic packer writes for the same plain object (smallest header for every
 * length and integer, integers past 2^32 as int64), which the codec tests
 * check byte for byte. It exists because the job record is encoded on every
 * transition, and the generic packer spends most of its time discovering a
 * shape we already know (a drain's profile of the server's main thread, in
 * bench/RESULTS.md, "The measurements behind the code's choices").
 */

/** The scratch buffer kept between writes; a bigger one (a large payload) is dropped after use. */
const SCRATCH_BYTES = 64 * 1024;

/** A map key as msgpack writes it (a fixstr of ASCII), ready to copy. */
export function msgpackKey(name: string): Buffer {
  if (name.length >= 32 || !/^[\x20-\x7e]*$/.test(name)) throw new Error(`not a short ASCII key: ${name}`);
  return Buffer.concat([Buffer.of(0xa0 | name.length), Buffer.from(name, 'latin1')]);
}

export class MsgpackWriter {
  private buf = Buffer.allocUnsafeSlow(SCRATCH_BYTES);
  private pos = 0;

  /** Start a new value. */
  reset(): void {
    this.pos = 0;
  }

  /** How many bytes were written since `reset`: where the next one goes. */
  get position(): number {
    return this.pos;
  }

  /** The bytes written since `reset`, copied out. */
  take(): Buffer {
    const out = Buffer.allocUnsafe(this.pos);
    this.buf.copy(out, 0, 0, this.pos);
    if (this.buf.length > SCRATCH_BYTES) this.buf = Buffer.allocUnsafeSlow(SCRATCH_BYTES);
    this.pos = 0;
    return out;
  }

  private ensure(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return;
    const bigger = Buffer.allocUnsafeSlow(Math.max(this.buf.length * 2, this.pos + bytes));
    this.buf.copy(bigger, 0, 0, this.pos);
    this.buf = bigger;
  }

  byte(value: number): void {
    this.ensure(1);
    this.buf[this.pos++] = value;
  }

  nil(): void {
    this.byte(0xc0);
  }

  bool(value: boolean): void {
    this.byte(value ? 0xc3 : 0xc2);
  }

  mapHeader(size: number): void {
    this.header(size, 0x80, 0xde);
  }

  arrayHeader(size: number): void {
    this.header(size, 0x90, 0xdc);
  }

  /** fix form under 16, else the 16-bit form (`wide`) or the 32-bit one after it. */
  private header(size: number, fix: number, wide: number): void {
    this.ensure(5);
    if (size < 16) {
      this.buf[this.pos++] = fix | size;
    } else if (size < 0x10000) {
      this.buf[this.pos++] = wide;
      this.buf.writeUInt16BE(size, this.pos);
      this.pos += 2;
    } else {
      this.buf[this.pos++] = wide + 1;
      this.buf.writeUInt32BE(size, this.pos);
      this.pos += 4;
    }
  }

  /** Bytes made by {@link msgpackKey}. */
  key(bytes: Buffer): void {
    this.ensure(bytes.length);
    // A loop: Buffer.copy's call overhead is most of the cost of copying a dozen bytes.
    const buf = this.buf;
    let at = this.pos;
    for (let i = 0; i < bytes.length; i++) buf[at++] = bytes[i] as number;
    this.pos = at;
  }

  /** A bin of `length` bytes that `write` fills in place (at the offset it is given). */
  binWith(length: number, write: (target: Buffer, offset: number) => void): void {
    this.ensure(5 + length);
    this.lengthHeader(length, 0xc4);
    write(this.buf, this.pos);
    this.pos += length;
  }

  /** A non-negative safe integer (the caller checks), or nil. */
  uint(value: number | null): void {
    if (value === null) return this.nil();
    this.ensure(9);
    const buf = this.buf;
    if (value < 0x80) {
      buf[this.pos++] = value;
    } else if (value < 0x100) {
      buf[this.pos++] = 0xcc;
      buf[this.pos++] = value;
    } else if (value < 0x10000) {
      buf[this.pos++] = 0xcd;
      buf.writeUInt16BE(value, this.pos);
      this.pos += 2;
    } else if (value <= 0xffff_ffff) {
      buf[this.pos++] = 0xce;
      buf.writeUInt32BE(value, this.pos);
      this.pos += 4;
    } else {
      // int64, as msgpackr writes a BigInt below 2^63; a safe integer's high word fits 21 bits.
      buf[this.pos++] = 0xd3;
      buf.writeUInt32BE(Math.floor(value / 0x1_0000_0000), this.pos);
      buf.writeUInt32BE(value >>> 0, this.pos + 4);
      this.pos += 8;
    }
  }

  /** UTF-8 text (well formed: the caller checks), or nil. */
  str(value: string | null): void {
    if (value === null) return this.nil();
    const length = value.length;
    if (length < 32) {
      // Short ASCII, the usual kind, tenant and event name: copy the characters directly.
      this.ensure(1 + length);
      const buf = this.buf;
      let at = this.pos + 1;
      let i = 0;
      for (; i < length; i++) {
        const c = value.charCodeAt(i);
        if (c >= 0x80) break;
        buf[at++] = c;
      }
      if (i === length) {
        buf[this.pos] = 0xa0 | length;
        this.pos = at;
        return;
      }
    }
    const bytes = Buffer.byteLength(value, 'utf8');
    this.ensure(5 + bytes);
    if (bytes < 32) this.buf[this.pos++] = 0xa0 | bytes;
    else this.lengthHeader(bytes, 0xd9);
    this.pos += this.buf.write(value, this.pos, bytes, 'utf8');
  }

  /** Opaque bytes, or nil. */
  bin(value: Uint8Array | null): void {
    if (value === null) return this.nil();
    const bytes = value.byteLength;
    this.ensure(5 + bytes);
    this.lengthHeader(bytes, 0xc4);
    this.buf.set(value, this.pos);
    this.pos += bytes;
  }

  /** The 8-, 16- or 32-bit length form, whose type bytes follow `type8`; room is ensured. */
  private lengthHeader(bytes: number, type8: number): void {
    const buf = this.buf;
    if (bytes < 0x100) {
      buf[this.pos++] = type8;
      buf[this.pos++] = bytes;
    } else if (bytes < 0x10000) {
      buf[this.pos++] = type8 + 1;
      buf.writeUInt16BE(bytes, this.pos);
      this.pos += 2;
    } else {
      buf[this.pos++] = type8 + 2;
      buf.writeUInt32BE(bytes, this.pos);
      this.pos += 4;
    }
  }
}
