/** The producers' role: the enqueue calls, as unary calls and as the requests of a Produce stream. */
import { invalidArgument } from '../../core/errors.ts';
import { eachOnItsOwn } from '../../engine/each.ts';
import { create } from '@bufbuild/protobuf';
import { EnqueueEachAnswerSchema } from '../../gen/telha/v1/queue_pb.ts';
import type { ProduceMethod, RequestOf, ResponseInitOf } from '../../wire/service.ts';
import { resolveScope, writeScope, type Principal } from '../../edge/auth.ts';
import { newJobFromWire, scopeFromWire, traceContextFromWire } from '../convert.ts';
import { tracedHandling } from '../../tracing/spans.ts';
import type { ProduceAnswer, ProduceEnqueue } from '../produce-session.ts';
import type { HandlerKit, QueueServiceImpl } from './kit.ts';

type Enqueues = {
  readonly [K in ProduceMethod]: (req: RequestOf<K>, principal: Principal) => Promise<ResponseInitOf<K>>;
};

export interface ProduceHandlers {
  readonly unary: Pick<QueueServiceImpl, ProduceMethod>;
  /** A Produce stream's request, run as its unary call. */
  readonly produce: (request: ProduceEnqueue, principal: Principal) => Promise<ProduceAnswer>;
}

export function produceHandlers(kit: HandlerKit): ProduceHandlers {
  const { queue, logger, handle, resultToWire, errorOutcome } = kit;

  // Each enqueue is a span of the server's handling, in its jobs' trace (tracing/spans.ts).
  const enqueues: Enqueues = {
    enqueue: (req, principal) =>
      tracedHandling('Enqueue', [traceContextFromWire(req.job)], async () => {
        const scope = writeScope(resolveScope(principal, scopeFromWire(req.scope), false));
        const result = await queue.enqueue(newJobFromWire(req.job, 'job'), scope);
        if (result.created) {
          logger.debug({ jobId: result.job.jobId, kind: result.job.kind, tenant: result.job.tenant }, 'enqueued');
        }
        return { result: resultToWire(result) };
      }),

    enqueueBatch: (req, principal) =>
      tracedHandling('EnqueueBatch', req.jobs.map(traceContextFromWire), async () => {
        const scope = writeScope(resolveScope(principal, scopeFromWire(req.scope), false));
        const jobs = req.jobs.map((job, i) => newJobFromWire(job, `jobs[${i}]`));
        const results = await queue.enqueueBatch(jobs, scope);
        return { results: results.map(resultToWire) };
      }),

    enqueueEach: (req, principal) =>
      tracedHandling('EnqueueEach', req.jobs.map(traceContextFromWire), async () => {
        const scope = writeScope(resolveScope(principal, scopeFromWire(req.scope), false));
        const results = await eachOnItsOwn(
          req.jobs,
          (job) => newJobFromWire(job, 'job'),
          (jobs) => queue.enqueueEach(jobs, scope),
        );
        const answers = results.map((result, index) =>
          create(EnqueueEachAnswerSchema, {
            answer: result.ok
              ? { case: 'result', value: resultToWire(result.value) }
              : { case: 'error', value: errorOutcome(result.error, `jobs[${index}]`) },
          }),
        );
        return { answers };
      }),
  };

  async function produce(request: ProduceEnqueue, principal: Principal): Promise<ProduceAnswer> {
    switch (request.case) {
      case 'single':
        return { case: 'single', value: await enqueues.enqueue(request.value, principal) };
      case 'batch':
        return { case: 'batch', value: await enqueues.enqueueBatch(request.value, principal) };
      case 'each':
        return { case: 'each', value: await enqueues.enqueueEach(request.value, principal) };
      default: {
        const never: never = request;
        throw invalidArgument('enqueue', `unknown request ${String(never)}`);
      }
    }
  }

  return {
    unary: {
      enqueue: handle('enqueue', 'enqueue', (req, { principal }) => enqueues.enqueue(req, principal)),
      enqueueBatch: handle('enqueueBatch', 'enqueue', (req, { principal }) => enqueues.enqueueBatch(req, principal)),
      enqueueEach: handle('enqueueEach', 'enqueue', (req, { principal }) => enqueues.enqueueEach(req, principal)),
    },
    produce,
  };
}
