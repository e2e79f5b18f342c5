/**
 * A TCP proxy in front of PostgreSQL that cuts a connection at a chosen
 * moment of a chosen statement, for the one fault `pg_terminate_backend`
 * cannot stage: a write that PostgreSQL committed whose answer never reached
 * the store. It reads the wire protocol's message frames (a type byte and a
 * length) just far enough to see which statement a connection runs (by its
 * text, or by the name it was prepared under) and when PostgreSQL reports
 * itself idle again.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * What to do to the next statement that matches: cut its connection before the statement
 * reaches PostgreSQL, cut it once PostgreSQL has committed the statement, or hold the statement
 * (and what follows it on that connection) until the test lets it go.
 */
export type Fault = 'before' | 'after-commit' | 'hold';

interface Armed {
  readonly match: RegExp;
  readonly fault: Fault;
  readonly done: () => void;
}

/** A statement held on its way to PostgreSQL. */
export interface Hold {
  /** Resolves once a matching statement is held. */
  readonly held: Promise<void>;
  /** Send it (and whatever queued behind it) on. */
  release(): void;
}

/** Splits a byte stream into protocol messages; the first client message (startup) has no type byte. */
class Frames {
  private buffer = Buffer.alloc(0);
  constructor(private untyped: boolean) {}

  push(chunk: Buffer): { type: string; frame: Buffer }[] {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    const frames: { type: string; frame: Buffer }[] = [];
    for (;;) {
      const head = this.untyped ? 0 : 1;
      if (this.buffer.length < head + 4) return frames;
      const length = head + this.buffer.readInt32BE(head);
      if (this.buffer.length < length) return frames;
      frames.push({
        type: this.untyped ? '' : String.fromCharCode(this.buffer[0] as number),
        frame: this.buffer.subarray(0, length),
      });
      this.buffer = this.buffer.subarray(length);
      this.untyped = false;
    }
  }
}

/**
 * The SQL text a frame runs: a simple Query ('Q'), an unnamed Parse ('P': statement name, then
 * the text), or a Bind ('B': portal name, then statement name) of a statement prepared by name on
 * this connection, whose Parse `prepared` recorded. A named Parse only prepares: its statement
 * runs, and is matched, at each Bind, so a statement run again by name meets the faults too.
 */
function statementText(type: string, frame: Buffer, prepared: Map<string, string>): string | null {
  if (type === 'Q') return frame.toString('utf8', 5, frame.indexOf(0, 5));
  if (type === 'P') {
    const name = frame.toString('utf8', 5, frame.indexOf(0, 5));
    const afterName = frame.indexOf(0, 5) + 1;
    const text = frame.toString('utf8', afterName, frame.indexOf(0, afterName));
    if (name === '') return text;
    prepared.set(name, text);
    return null;
  }
  if (type === 'B') {
    const afterPortal = frame.indexOf(0, 5) + 1;
    const name = frame.toString('utf8', afterPortal, frame.indexOf(0, afterPortal));
    return name === '' ? null : (prepared.get(name) ?? null);
  }
  return null;
}

export class FaultProxy {
  private readonly sockets = new Set<Socket>();
  private readonly armed: Armed[] = [];
  private readonly releases = new Set<() => void>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(target: { host: string; port: number }): Promise<FaultProxy> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const proxy = new FaultProxy(server, (server.address() as { port: number }).port);
    server.on('connection', (client) => proxy.relay(client, connect(target.port, target.host)));
    return proxy;
  }

  /** `url` with its host and port replaced by the proxy's. */
  url(url: string): string {
    const via = new URL(url);
    via.hostname = '127.0.0.1';
    via.port = String(this.port);
    return via.toString();
  }

  /**
   * Cut the next connection that runs a statement matching `match`, at `when`. Resolves once it
   * is cut. Several faults may be armed at once; each strikes once, at the first statement it matches.
   */
  cutOnce(match: RegExp, when: 'before' | 'after-commit'): Promise<void> {
    return this.arm(match, when);
  }

  /** Hold the next statement matching `match` until `release()`. */
  holdOnce(match: RegExp): Hold {
    return {
      held: this.arm(match, 'hold'),
      release: () => {
        for (const go of this.releases) go();
        this.releases.clear();
      },
    };
  }

  private arm(match: RegExp, fault: Fault): Promise<void> {
    return new Promise((resolve) => this.armed.push({ match, fault, done: resolve }));
  }

  async close(): Promise<void> {
    for (const go of this.releases) go();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private relay(client: Socket, server: Socket): void {
    for (const socket of [client, server]) {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    const cut = (): void => {
      client.destroy();
      server.destroy();
    };
    client.on('close', () => server.destroy());
    server.on('close', () => client.destroy());
    // The cut this connection is running toward: set when it sends the statement, fired at its commit.
    let pending: Armed | null = null;
    // Frames held on their way to PostgreSQL, while a hold lasts.
    let held: Buffer[] | null = null;
    // Statements this connection prepared by name, by name.
    const prepared = new Map<string, string>();
    const fromClient = new Frames(true);
    const fromServer = new Frames(false);
    client.on('data', (chunk) => {
      for (const { type, frame } of fromClient.push(chunk)) {
        const text = statementText(type, frame, prepared);
        const at = text === null ? -1 : this.armed.findIndex((a) => a.match.test(text));
        const armed = at < 0 ? null : this.armed.splice(at, 1)[0];
        if (armed !== undefined && armed !== null) {
          if (armed.fault === 'before') {
            cut();
            armed.done();
            return;
          }
          if (armed.fault === 'hold') {
            held = [];
            this.releases.add(() => {
              for (const frame of held ?? []) server.write(frame);
              held = null;
            });
            armed.done();
          } else pending = armed;
        }
        if (held !== null) held.push(frame);
        else server.write(frame);
      }
    });
    server.on('data', (chunk) => {
      for (const { type, frame } of fromServer.push(chunk)) {
        // ReadyForQuery with status 'I': the statement is finished and no transaction is open,
        // so whatever it wrote is committed. The store never sees this message.
        if (pending !== null && type === 'Z' && frame[5] === 'I'.charCodeAt(0)) {
          cut();
          pending.done();
          pending = null;
          return;
        }
        client.write(frame);
      }
    });
  }
}
