/** Talking to the HTTP listener as a browser would (a cookie, the CSRF token in forms) and reading /metrics. */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import type { ConfigInput } from '../../src/core/config.ts';
import { TOKEN_ROLES } from './refuses.ts';
import { liveServer, type TestServer } from './server.ts';

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

/**
 * Parse /metrics text with parse-prometheus-text-format (which throws on a
 * malformed line). `value(name, labels)` finds a counter or gauge sample (0
 * when absent). The package folds a histogram's labelled series into one, so
 * `histogramCount` reads the `_count` sample of the labelled series from the
 * text itself, once the package has accepted the whole text.
 */
export function parseMetrics(text: string): {
  families: Map<string, MetricFamily>;
  value(name: string, labels?: Record<string, string>): number;
  histogramCount(name: string, labels?: Record<string, string>): number;
} {
  const families = new Map(parsePrometheus(text).map((f) => [f.name, f]));
  const matches = (have: Readonly<Record<string, string>> | undefined, want: Record<string, string>): boolean =>
    Object.entries(want).every(([k, v]) => have?.[k] === v);
  return {
    families,
    value(name, labels = {}) {
      const family = families.get(name);
      assert.ok(family, `no metric ${name}`);
      return Number(family.metrics.find((m) => matches(m.labels, labels))?.value ?? 0);
    },
    histogramCount(name, labels = {}) {
      assert.equal(families.get(name)?.type, 'HISTOGRAM', `no histogram ${name}`);
      for (const line of text.split('\n')) {
        const sample = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
        if (sample?.[1] !== `${name}_count`) continue;
        const have: Record<string, string> = {};
        for (const m of (sample[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) have[m[1] ?? ''] = m[2] ?? '';
        if (matches(have, labels)) return Number(sample[3]);
      }
      return 0;
    },
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

/** The dashboard tests' server, and sessions on it. */
export interface DashboardServer {
  readonly server: TestServer;
  /** A browser logged in with `token` (the login answered 303, to the overview). */
  readonly signedIn: (token: string) => Promise<Browser>;
}

/**
 * A server that knows one token of each role (`TOKEN_ROLES`), with `values` for its other
 * sections, started before the tests of the `describe` it is called in and closed after them
 * (`liveServer`), with a way to sign in to its dashboard: `const { server, signedIn } = dashboardServer()`.
 */
export function dashboardServer(values: ConfigInput = {}): DashboardServer {
  const { server } = liveServer({ ...values, server: { tokens: [...TOKEN_ROLES] } });
  return {
    server,
    signedIn: async (token) => {
      const browser = new Browser(server.http);
      assert.equal((await browser.login(token)).status, 303);
      return browser;
    },
  };
}
