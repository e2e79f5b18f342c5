/**
 * Watch messages as the bytes the transport sends, each log entry's event encoded once for every
 * watcher that reads it.
 *
 * A WatchEvent holds only what its entry holds (the transition, the job as the entry has it, the
 * entry's own position), never anything of the watcher, so its bytes can be shared: a watcher's
 * message is its own selection of entries (its filter and scope chose them) with their shared
 * bytes laid end to end, then its own resume token. Protobuf encodes a repeated message field as
 * each element's bytes in turn, so the message is byte for byte what encoding it whole writes.
 *
 * Encoding every event once per watcher (converting the job and writing protobuf, each time)
 * was the CPU that let 500 watchers of one scope push Enqueue past 1 s at p99 (bench/RESULTS.md,
 * "Unread Watch streams").
 */
import { create, toBinary, type MessageInitShape } from '@bufbuild/protobuf';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { resultBytesOf, transitionOf, type LogEntry, type LogRecord } from '../core/transitions-log.ts';
import type { JobRecord } from '../core/types.ts';
import { WatchEventSchema, WatchResponseSchema, type Job } from '../gen/telha/v1/queue_pb.ts';

/** `WatchResponse.events` and `WatchResponse.resume_token`: the field numbers the message is laid out with. */
const EVENTS_FIELD = WatchResponseSchema.field.events.number;
const RESUME_TOKEN_FIELD = WatchResponseSchema.field.resumeToken.number;

/** An entry's encoded event, with the number of the entry it was encoded for. */
interface EncodedEvent {
  readonly seq: number;
  readonly bytes: Uint8Array;
}

export class WatchMessages {
  /**
   * Events by their entry's job: a store hands every reader of a recent entry the same object
   * (RocksDB's recent log, the memory store), so the watchers at the head share one encoding, and
   * it goes when the store lets the entry go. An entry read again from disk is a new object,
   * encoded for its reader.
   */
  private readonly events = new WeakMap<LogRecord, EncodedEvent>();

  constructor(private readonly toWire: (job: JobRecord) => Job) {}

  /** A message of `entries`' events and `resumeToken`, as `toBinary(WatchResponseSchema, ...)` writes it. */
  message(entries: readonly LogEntry[], resumeToken: string): Uint8Array {
    const writer = new BinaryWriter();
    for (const entry of entries) writer.tag(EVENTS_FIELD, WireType.LengthDelimited).bytes(this.event(entry));
    // proto3 writes no empty string.
    if (resumeToken !== '') writer.tag(RESUME_TOKEN_FIELD, WireType.LengthDelimited).string(resumeToken);
    return writer.finish();
  }

  /** The entry's event, encoded the first time any watcher reads it. */
  private event(entry: LogEntry): Uint8Array {
    const cached = this.events.get(entry.job);
    // The seq check: one job object is one entry in every store, and were it ever not, the event
    // is encoded again rather than carry another entry's number and position.
    if (cached !== undefined && cached.seq === entry.seq) return cached.bytes;
    const bytes = toBinary(WatchEventSchema, create(WatchEventSchema, this.eventOf(entry)));
    this.events.set(entry.job, { seq: entry.seq, bytes });
    return bytes;
  }

  private eventOf({ job, seq, position }: LogEntry): MessageInitShape<typeof WatchEventSchema> {
    const { transition, detail, at } = transitionOf(job);
    const resultBytes = resultBytesOf(job);
    return {
      sequence: BigInt(seq),
      transition,
      ...(detail === null ? {} : { detail }),
      atUs: BigInt(at),
      job: this.toWire(job),
      resumeToken: position,
      ...(resultBytes === null ? {} : { resultBytes: BigInt(resultBytes) }),
    };
  }
}
