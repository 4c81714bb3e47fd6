/**
 * The page an invitation link opens: /dashboard/invite#<token>. Like the verification page, the token stays in the
 * fragment until the user accepts. Signed in, the user accepts as itself; signed out, a new person chooses a
 * password (someone who already has a login signs in first, then opens the link again).
 */
import { html, render } from 'lit-html';
import { ApiError, api, type SessionInfo } from '../api.js';
import type { Page } from '../app.js';
import { textField } from '../forms.js';

export const invitePage: Page = (container, app) => {
  const token = location.hash.slice(1);
  let busy = false;
  let error = token ? '' : 'This link is incomplete: open the invitation link again.';

  async function accept(event: SubmitEvent) {
    event.preventDefault();
    const password = textField(new FormData(event.target as HTMLFormElement), 'password');
    busy = true;
    error = '';
    draw();
    try {
      const answer = await api<SessionInfo>('POST', '/invitations/accept', {
        token,
        ...(app.session.signed_in ? {} : { password }),
      });
      history.replaceState(null, '', location.pathname);
      return app.signedIn(answer);
    } catch (caught) {
      error = caught instanceof ApiError ? caught.message : 'Something went wrong; try again.';
    }
    busy = false;
    draw();
  }

  function draw() {
    const signedIn = app.session.signed_in;
    render(
      html`
        <section class="auth card">
          <h1>Join an account</h1>
          ${error ? html`<p class="error" role="alert">${error}</p>` : null}
          <form @submit=${accept}>
            ${
              signedIn
                ? html`<p>You accept as ${app.session.user?.email ?? app.session.email}.</p>`
                : html`<p class="muted">
                      New here? Choose a password. Already have a login for this email?
                      <a href="/dashboard/signin">Sign in</a>, then open the link again.
                    </p>
                    <label for="invite-password">Password</label>
                    <input id="invite-password" name="password" type="password" autocomplete="new-password" required />`
            }
            <button type="submit" ?disabled=${!token || busy}>Accept the invitation</button>
          </form>
        </section>
      `,
      container,
    );
  }
  draw();
};
