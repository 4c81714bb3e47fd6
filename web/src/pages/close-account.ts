/**
 * Close this account (owners only): typed confirmation of the account's email. Every key is revoked and every
 * member, webhook and invitation removed; the balance, ledger and audit log are kept.
 */
import { html, render } from 'lit-html';
import { ApiError, api } from '../api.js';
import { textField } from '../forms.js';

export function closeAccountSection(container: HTMLElement, accountEmail: string): void {
  let error = '';

  async function close(event: SubmitEvent) {
    event.preventDefault();
    const confirm = textField(new FormData(event.target as HTMLFormElement), 'confirm');
    try {
      await api('POST', '/account/close', { confirm });
      location.assign('/dashboard/');
    } catch (caught) {
      error = caught instanceof ApiError ? caught.message : 'The account could not be closed.';
      draw();
    }
  }

  function draw() {
    render(
      html`<section class="card" aria-labelledby="close-heading">
        <h2 id="close-heading">Close this account</h2>
        <p class="help" id="close-help">
          Every key stops working at once, every member, webhook and invitation is removed, and auto-recharge is
          switched off. The balance, the ledger and the audit log are kept: ask the gateway's operator about a refund of
          the balance. This cannot be undone.
        </p>
        <form class="grid-form" @submit=${close}>
          <label for="close-confirm">Type <strong>${accountEmail}</strong> to confirm</label>
          <input id="close-confirm" name="confirm" autocomplete="off" aria-describedby="close-help" required />
          ${error ? html`<p class="error" role="alert">${error}</p>` : null}
          <div class="actions"><button type="submit" class="danger">Close this account</button></div>
        </form>
      </section>`,
      container,
    );
  }

  draw();
}
