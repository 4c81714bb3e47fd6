/** Sign in and sign up: one form, two modes. */
import { html, render } from 'lit-html';
import { ApiError, api, type ApiKey, type SessionInfo } from '../api.js';
import type { Page } from '../app.js';

export function authPage(mode: 'signin' | 'signup'): Page {
  return (container, app) => {
    let error = '';
    let busy = false;
    const signup = mode === 'signup';

    async function submit(event: SubmitEvent) {
      event.preventDefault();
      const form = new FormData(event.target as HTMLFormElement);
      const email = String(form.get('email') ?? '');
      const password = String(form.get('password') ?? '');
      if (signup && password !== String(form.get('confirm') ?? '')) {
        error = 'The passwords do not match.';
        return draw();
      }
      busy = true;
      error = '';
      draw();
      try {
        const session = await api<SessionInfo & { first_key?: ApiKey }>('POST', signup ? '/signup' : '/signin', { email, password });
        app.signedIn(session, session.first_key);
      } catch (caught) {
        busy = false;
        error = caught instanceof ApiError ? caught.message : 'Something went wrong; try again.';
        draw();
      }
    }

    function draw() {
      render(
        html`
          <section class="auth card">
            <h1>${signup ? 'Create your account' : 'Sign in to tollgate'}</h1>
            <p class="muted">
              ${signup
                ? app.session.signup_credit
                  ? `New accounts start with ${app.session.signup_credit} USD of free credit.`
                  : 'Create an account to get API keys.'
                : 'Manage your API keys, credits and usage.'}
            </p>
            <form @submit=${submit} novalidate>
              <label for="email">Email</label>
              <input id="email" name="email" type="email" autocomplete="email" required />
              <label for="password">Password</label>
              <input id="password" name="password" type="password" minlength="8" required
                autocomplete=${signup ? 'new-password' : 'current-password'}
                aria-describedby=${signup ? 'password-help' : ''} />
              ${signup
                ? html`<p id="password-help" class="help">At least 8 characters.</p>
                    <label for="confirm">Confirm password</label>
                    <input id="confirm" name="confirm" type="password" autocomplete="new-password" required />`
                : null}
              ${error ? html`<p class="error" role="alert">${error}</p>` : null}
              <button type="submit" ?disabled=${busy}>${signup ? 'Create account' : 'Sign in'}</button>
            </form>
            ${signup
              ? html`<p>Already have an account? <a href="/dashboard/signin">Sign in</a></p>`
              : app.session.signup_enabled
                ? html`<p>New to tollgate? <a href="/dashboard/signup">Create an account</a></p>`
                : null}
          </section>
        `,
        container,
      );
    }
    draw();
  };
}
