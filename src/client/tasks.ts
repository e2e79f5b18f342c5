/**
 * Typed tasks: a job kind declared once with a Standard Schema validator (zod, valibot, ...),
 * giving a typed, validated enqueue on the producer and a typed `job.data` in the handler.
 * The payload travels as JSON (UTF-8) unless the task names another codec; the raw bytes stay
 * on `job.payload`. Validation happens on both ends: the producer refuses bad data before any
 * call, and a worker dead-letters at once a payload that slipped past (an old producer, a raw
 * enqueue), since running it again would fail the same way.
 */
import { ErrorCode, invalidArgument, TelhaError } from '../core/errors.ts';
import type { EnqueueResult, JobRecord, NewJob, QueueScope } from '../core/types.ts';
import { PermanentError, type JobContext, type TaskHandler } from '../worker/runner.ts';
import type { StandardSchemaV1 } from './standard-schema.ts';

/** How a task's data becomes a job's payload bytes and back. */
export interface PayloadCodec {
  encode(value: unknown): Uint8Array;
  /** Throws if the bytes are not a value of this codec. */
  decode(bytes: Uint8Array): unknown;
}

/** The default codec: JSON text, UTF-8. */
export const jsonCodec: PayloadCodec = {
  encode: (value) => new TextEncoder().encode(JSON.stringify(value)),
  decode: (bytes) => JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as unknown,
};

/** Options of {@link defineTask}. */
export interface TaskOptions {
  /** How the data is stored as the payload. Default {@link jsonCodec}. */
  readonly codec?: PayloadCodec;
}

/** What `task.enqueue` takes besides the data: a `NewJob` but for its kind and payload, which the task sets. */
export type TaskEnqueueOptions = Omit<NewJob, 'kind' | 'payload'>;

/** Anything that enqueues: a `TelhaClient`, or an in-process `Queue` (given a scope). */
export interface TaskProducer<J extends JobRecord> {
  enqueue(job: NewJob, scope?: QueueScope): Promise<EnqueueResult<J>>;
}

/** What a typed handler gets: the job's context, with its payload decoded and validated as `data`. */
export interface TaskJob<Data> extends JobContext {
  readonly data: Data;
}

/** A typed handler: what it resolves to is the job's result, as for a `JobHandler`. */
export type TaskJobHandler<Data> = (job: TaskJob<Data>) => Promise<unknown>;

/** Options of {@link Task.handle}. */
export interface TaskHandleOptions {
  /** At most this many jobs of this task run at once in the worker (whose `concurrency` stays the cap). Default: no limit of its own. */
  readonly concurrency?: number;
}

/**
 * A job kind with a schema: made by {@link defineTask}. `Input` is what a producer passes,
 * `Output` what a handler gets (they differ when the schema transforms or fills defaults).
 */
export class Task<Input, Output> {
  /** The job kind this task enqueues and handles. */
  readonly kind: string;
  /** The Standard Schema validator of its data. */
  readonly schema: StandardSchemaV1<Input, Output>;
  /** How its data is stored as the payload. */
  readonly codec: PayloadCodec;

  constructor(kind: string, schema: StandardSchemaV1<Input, Output>, options: TaskOptions = {}) {
    if (typeof schema?.['~standard']?.validate !== 'function')
      throw new TypeError(`task ${kind}: the schema is not a Standard Schema (it has no ['~standard'].validate)`);
    this.kind = kind;
    this.schema = schema;
    this.codec = options.codec ?? jsonCodec;
  }

  /**
   * Validate data against the schema (sync or async schemas alike). Rejects with an
   * `invalid_argument` `TelhaError` whose `field` is the first issue's path under `payload`
   * (`payload.to`) and whose message lists every issue.
   */
  async parse(data: unknown): Promise<Output> {
    const result = await this.schema['~standard'].validate(data);
    if (result.issues === undefined) return result.value;
    const issues = result.issues.map((issue) => ({ field: issuePath(issue), message: issue.message }));
    const first = issues[0] ?? { field: 'payload', message: 'invalid' };
    const message = issues.map((issue) => `${issue.field}: ${issue.message}`).join('; ');
    throw new TelhaError(ErrorCode.InvalidArgument, `task ${this.kind}: ${message}`, { field: first.field });
  }

  /** The payload bytes of data (not validated: `enqueue` validates first). */
  encode(data: Input): Uint8Array {
    return this.codec.encode(data);
  }

  /** The data in payload bytes, decoded and validated; rejects with `invalid_argument` (field `payload`) if they do not decode. */
  async decode(payload: Uint8Array): Promise<Output> {
    let data: unknown;
    try {
      data = this.codec.decode(payload);
    } catch (error) {
      throw invalidArgument('payload', `task ${this.kind}: does not decode: ${(error as Error).message}`);
    }
    return this.parse(data);
  }

  /**
   * Validate data, then enqueue a job of this task's kind with it as the payload. Bad data is
   * refused before any call (nothing is written), with the error {@link Task.parse} gives.
   * The payload is the data as given, so a handler's validation yields the same output.
   */
  async enqueue<J extends JobRecord>(
    producer: TaskProducer<J>,
    data: Input,
    options: TaskEnqueueOptions = {},
    scope?: QueueScope,
  ): Promise<EnqueueResult<J>> {
    await this.parse(data);
    return producer.enqueue({ ...options, kind: this.kind, payload: this.encode(data) }, scope);
  }

  /**
   * A handler of this task for a `Worker`'s `tasks`. It gets `job.data` decoded and validated;
   * a payload that fails fails its job permanently (dead-lettered at once, the validation error
   * in its `failed` event), because no retry would make it valid.
   */
  handle(handler: TaskJobHandler<Output>, options: TaskHandleOptions = {}): TaskHandler {
    return {
      kind: this.kind,
      ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
      handler: async (job) => {
        let data: Output;
        try {
          data = await this.decode(job.payload);
        } catch (error) {
          throw new PermanentError(`invalid payload: ${(error as Error).message}`, { cause: error });
        }
        // The context's own properties stay where they are (its signal is a lazy getter).
        const typed = Object.create(job, { data: { value: data, enumerable: true } }) as TaskJob<Output>;
        return handler(typed);
      },
    };
  }
}

/**
 * Declare a task: a job kind whose payload the schema validates.
 *
 * @example
 * const sendEmail = defineTask('email.send', z.object({ to: z.email() }));
 * await sendEmail.enqueue(client, { to: 'a@b.c' });
 * new Worker({ address, tasks: [sendEmail.handle(async (job) => send(job.data.to))] });
 */
export function defineTask<S extends StandardSchemaV1>(
  kind: string,
  schema: S,
  options?: TaskOptions,
): Task<StandardSchemaV1.InferInput<S>, StandardSchemaV1.InferOutput<S>> {
  return new Task(kind, schema, options);
}

/** `payload.to`, `payload.items[2].name`: where an issue is, under the job's payload. */
function issuePath(issue: StandardSchemaV1.Issue): string {
  let field = 'payload';
  for (const segment of issue.path ?? []) {
    const key = typeof segment === 'object' ? segment.key : segment;
    field += typeof key === 'number' ? `[${key}]` : `.${String(key)}`;
  }
  return field;
}
