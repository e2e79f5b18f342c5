// Loaded with `node --import` (NODE_OPTIONS) into a child process of the tracing tests (a
// `telha serve`, a worker): registers an OpenTelemetry SDK whose exporter appends each ended
// span, as one JSON line, to $TELHA_TEST_SPANS_FILE, which the test reads. Plain JavaScript: it
// loads before tsx does.
import { appendFileSync } from 'node:fs';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

const file = process.env.TELHA_TEST_SPANS_FILE;
if (file) {
  const exporter = {
    export(spans, done) {
      for (const span of spans) {
        const line = {
          name: span.name,
          kind: span.kind,
          traceId: span.spanContext().traceId,
          spanId: span.spanContext().spanId,
          parentSpanId: span.parentSpanContext?.spanId ?? null,
          links: span.links.map((link) => ({ traceId: link.context.traceId, spanId: link.context.spanId })),
          attributes: span.attributes,
          status: span.status.code,
        };
        appendFileSync(file, `${JSON.stringify(line)}\n`);
      }
      done({ code: 0 });
    },
    shutdown: () => Promise.resolve(),
  };
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
}
