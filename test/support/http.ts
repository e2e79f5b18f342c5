/** Talking to the HTTP listener as a browser would (a cookie, the CSRF token in forms) and reading /metrics. */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** One metric family as parse-prometheus-text-format reads the text format. */
export interface MetricFamily {
  readonly name: string;
  readonly type: string;
  readonly metrics: readonly {
    readonly value?: string;
    readonly labels?: Readonly<Record<string, string>>;
    readonly count?: string;
    readonly sum?: string;
    readonly buckets?: Readonly<Record<string, string>>;
  }[];
}

// The package ships no types; this is its one function.
const parsePrometheus = require('parse-prometheus-text-format') as (text: string) => MetricFamily[];

/** Parse /metrics text; `value(name, labels)` finds one sample (0 when absent). */
export function parseMetrics(text: string): {
  families: Map<string, MetricFamily>;
  value(name: string, labels?: Record<string, string>): number;
  histogramCount(name: string, labels?: Record<string, string>): number;
} {
  const families = new Map(parsePrometheus(text).map((f) => [f.name, f]));
  const find = (name: string, labels: Record<string, string>) => {
    const family = families.get(name);
    assert.ok(family, `no metric ${name}`);
    return family.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  };
  return {
    families,
    value: (name, labels = {}) => Number(find(name, labels)?.value ?? 0),
    histogramCount: (name, labels = {}) => Number(find(name, labels)?.count ?? 0),
  };
}

export interface Reply {
  readonly status: number;
  readonly text: string;
  readonly headers: Headers;
}

/** A browser's view of the dashboard: it keeps the session cookie and reads the CSRF token from pages. */
export class Browser {
  cookie: string | null = null;

  constructor(readonly base: string) {}

  async get(path: string, headers: Record<string, string> = {}): Promise<Reply> {
    const response = await fetch(this.base + path, {
      redirect: 'manual',
      headers: { accept: 'text/html', ...(this.cookie === null ? {} : { cookie: this.cookie }), ...headers },
    });
    this.keepCookie(response);
    return { status: response.status, text: await response.text(), headers: response.headers };
  }

  async post(path: string, form: Record<string, string>, headers: Record<string, string> = {}): Promise<Reply> {
    const response = await fetch(this.base + path, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        accept: 'text/html',
        'content-type': 'application/x-www-form-urlencoded',
        ...(this.cookie === null ? {} : { cookie: this.cookie }),
        ...headers,
      },
      body: new URLSearchParams(form).toString(),
    });
    this.keepCookie(response);
    return { status: response.status, text: await response.text(), headers: response.headers };
  }

  /** Log in with `token`; returns the reply to the login form. */
  login(token: string): Promise<Reply> {
    return this.post('/login', { token });
  }

  /** The CSRF token the pages of this session carry. */
  async csrf(): Promise<string> {
    const page = await this.get('/jobs');
    const match = /<meta name="csrf-token" content="([^"]+)" \/>/.exec(page.text);
    assert.ok(match?.[1], `no CSRF field on /jobs (status ${page.status})`);
    return match[1];
  }

  private keepCookie(response: Response): void {
    const set = response.headers.get('set-cookie');
    const match = set === null ? null : /^(telha_session=[^;]*)/.exec(set);
    if (match?.[1]) this.cookie = match[1];
  }
}
