/** Sign in and sign up: one form, two modes. */
import { html, render } from 'lit-html';
import { ApiError, api, type ApiKey, type SessionInfo } from '../api.js';
import type { Page } from '../app.js';
import { textField } from '../forms.js';

export function authPage(mode: 'signin' | 'signup'): Page {
  return (container, app) => {
    let error = '';
    let busy = false;
    /** Set once sign-up has emailed a verification link. */
    let sentTo = '';
    const signup = mode === 'signup';

    async function submit(event: SubmitEvent) {
      event.preventDefault();
      const form = new FormData(event.target as HTMLFormElement);
      const email = textField(form, 'email');
      const password = textField(form, 'password');
      if (signup && password !== textField(form, 'confirm')) {
        error = 'The passwords do not match.';
        return draw();
      }
      busy = true;
      error = '';
      draw();
      try {
        const session = await api<SessionInfo & { first_key?: ApiKey; verification_sent?: boolean }>(
          'POST',
          signup ? '/signup' : '/signin',
          { email, password },
        );
        if (session.verification_sent) {
          sentTo = email;
          return draw();
        }
        app.signedIn(session, session.first_key);
      } catch (caught) {
        busy = false;
        error = caught instanceof ApiError ? caught.message : 'Something went wrong; try again.';
        draw();
      }
    }

    function draw() {
      if (sentTo) return render(checkYourEmail(sentTo), container);
      render(
        html`
          <section class="auth card">
            <h1>${signup ? 'Create your account' : 'Sign in to tollgate'}</h1>
            <p class="muted">
              ${
                signup
                  ? app.session.signup_credit
                    ? `New accounts start with ${app.session.signup_credit} USD of free credit${app.session.verification_required ? ' once the email is confirmed' : ''}.`
                    : 'Create an account to get API keys.'
                  : 'Manage your API keys, credits and usage.'
              }
            </p>
            <form @submit=${submit} novalidate>
              <label for="email">Email</label>
              <input id="email" name="email" type="email" autocomplete="email" required />
              <label for="password">Password</label>
              <input
                id="password"
                name="password"
                type="password"
                minlength=${signup ? '12' : '1'}
                required
                autocomplete=${signup ? 'new-password' : 'current-password'}
                aria-describedby=${signup ? 'password-help' : ''}
              />
              ${
                signup
                  ? html`<p id="password-help" class="help">At least 12 characters; a few unrelated words work well.</p>
                      <label for="confirm">Confirm password</label>
                      <input id="confirm" name="confirm" type="password" autocomplete="new-password" required />`
                  : null
              }
              ${error ? html`<p class="error" role="alert">${error}</p>` : null}
              <button type="submit" ?disabled=${busy}>${signup ? 'Create account' : 'Sign in'}</button>
            </form>
            ${
              signup
                ? html`<p>Already have an account? <a href="/dashboard/signin">Sign in</a></p>`
                : app.session.signup_enabled
                  ? html`<p>New to tollgate? <a href="/dashboard/signup">Create an account</a></p>`
                  : null
            }
          </section>
        `,
        container,
      );
    }
    draw();
  };
}

function checkYourEmail(email: string) {
  return html`
    <section class="auth card" aria-live="polite">
      <h1>Check your email</h1>
      <p>
        We sent a link to <strong>${email}</strong>. Open it to confirm the address and finish creating your account.
      </p>
      <p class="muted">The link works once. Nothing there? Check the spam folder, or sign up again for a new link.</p>
      <p><a href="/dashboard/signin">Back to sign in</a></p>
    </section>
  `;
}
