/**
 * The page an emailed verification link opens: /dashboard/verify#<token>. The token stays in the fragment (never
 * sent to the server by the browser, never in a Referer) until the user confirms, so a mail scanner that
 * prefetches the link uses nothing up.
 */
import { html, render } from 'lit-html';
import { ApiError, api, type ApiKey, type SessionInfo } from '../api.js';
import type { Page } from '../app.js';

export const verifyPage: Page = (container, app) => {
  const token = location.hash.slice(1);
  let state: 'ready' | 'busy' | 'done' = 'ready';
  let error = token ? '' : 'This link is incomplete: open the link from the email again.';

  async function confirm() {
    state = 'busy';
    error = '';
    draw();
    try {
      const answer = await api<SessionInfo & { verified: boolean; first_key?: ApiKey }>('POST', '/verify', { token });
      history.replaceState(null, '', location.pathname);
      if (answer.signed_in) return app.signedIn(answer, answer.first_key);
      state = 'done';
    } catch (caught) {
      state = 'ready';
      error = caught instanceof ApiError ? caught.message : 'Something went wrong; try again.';
    }
    draw();
  }

  function draw() {
    render(
      html`
        <section class="auth card">
          <h1>Confirm your email</h1>
          ${
            state === 'done'
              ? html`<p>Your email is confirmed. <a href="/dashboard/signin">Sign in</a> to continue.</p>`
              : html`<p class="muted">One click finishes creating your account.</p>
                  ${error ? html`<p class="error" role="alert">${error}</p>` : null}
                  <button type="button" ?disabled=${!token || state === 'busy'} @click=${confirm}>
                    Confirm my email
                  </button>`
          }
        </section>
      `,
      container,
    );
  }
  draw();
};
