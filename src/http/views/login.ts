/** The login page: a token in, a session cookie out. */
import { html, type Html } from '../html.ts';
import { notice, page } from './layout.ts';

export function loginPage(error: string | null): Html {
  return page({
    title: 'Log in',
    section: null,
    viewer: null,
    body: html`<section class="panel login">
      <h1>Log in</h1>
      <p>
        Paste an operator or tenant token from <span class="mono">server.tokens</span>. It is checked once and never
        stored in your browser: the session cookie holds only a random id.
      </p>
      ${error === null ? '' : notice('error', error)}
      <form method="post" action="/login">
        <label>Token <input type="password" name="token" autocomplete="current-password" required autofocus /></label>
        <button class="primary" type="submit">Log in</button>
      </form>
    </section>`,
  });
}
