/**
 * Buying credit: "Add credits" sends the browser to Stripe's checkout; back from it (`?purchase=cp_…`) the
 * purchase shows pending until Stripe confirms it (polled every 2 s for 2 minutes); the purchases, with receipts;
 * and the card auto-recharges, with Stripe's reference and why one failed.
 */
import { html, render } from 'lit-html';
import { ApiError, api, type List, type Purchase, type Purchasing, type Recharge } from '../api.js';
import { dateTime, usd } from '../format.js';

const PAGE = 10;
const POLL_MS = 2_000;
const POLL_FOR_MS = 120_000;

/** One newest-first list of the dashboard API, paged with `before` cursors. */
class Paged<T extends { id: string }> {
  page: List<T> | undefined;
  private readonly cursors: Array<string | undefined> = [];
  private cursor: string | undefined;

  constructor(private readonly path: string) {}

  async load(): Promise<void> {
    this.page = await api<List<T>>(
      'GET',
      `${this.path}?limit=${PAGE}${this.cursor ? `&before=${encodeURIComponent(this.cursor)}` : ''}`,
    );
  }

  /** Page 1, 2, … */
  get number(): number {
    return this.cursors.length + 1;
  }

  /** Whether there is anything on this page or another. */
  get any(): boolean {
    return Boolean(this.page?.data.length) || this.cursors.length > 0;
  }

  turn(back: boolean): Promise<void> {
    if (back) {
      this.cursor = this.cursors.pop();
    } else {
      this.cursors.push(this.cursor);
      this.cursor = this.page?.next_before ?? undefined;
    }
    return this.load();
  }
}

/** `onPaid`: the purchase the buyer came back with was credited (the balance changed). Returns the cleanup. */
export function purchasesSection(container: HTMLElement, onPaid: () => void): () => void {
  const params = new URLSearchParams(location.search);
  const returning = params.get('purchase');
  const canceled = params.get('canceled') === '1';
  let purchasing: Purchasing | undefined;
  const purchases = new Paged<Purchase>('/purchases');
  const recharges = new Paged<Recharge>('/recharges');
  let current: Purchase | undefined;
  let waitedTooLong = false;
  let error = '';
  let busy = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const pollUntil = Date.now() + POLL_FOR_MS;

  async function load() {
    try {
      [purchasing] = await Promise.all([api<Purchasing>('GET', '/purchasing'), purchases.load(), recharges.load()]);
      if (returning) await poll();
    } catch (caught) {
      error = (caught as Error).message;
    }
    draw();
  }

  async function poll() {
    const before = current?.status;
    current = await api<Purchase>('GET', `/purchases/${encodeURIComponent(returning!)}`);
    if (current.status === 'pending' && !canceled) {
      if (Date.now() < pollUntil)
        timer = setTimeout(
          () =>
            void poll()
              .catch(() => undefined)
              .finally(draw),
          POLL_MS,
        );
      else waitedTooLong = true;
    } else if (before === 'pending' && current.status !== 'pending') {
      await purchases.load();
      if (current.status === 'paid') onPaid();
    }
  }

  async function buy(event: SubmitEvent) {
    event.preventDefault();
    const amount = Number(new FormData(event.target as HTMLFormElement).get('amount'));
    busy = true;
    error = '';
    draw();
    try {
      const purchase = await api<Purchase>('POST', '/purchases', { amount });
      if (!purchase.checkout_url) throw new Error('The payment page could not be opened; try again.');
      location.assign(purchase.checkout_url);
      return;
    } catch (caught) {
      error =
        caught instanceof ApiError || caught instanceof Error ? caught.message : 'The purchase could not be started.';
    }
    busy = false;
    draw();
  }

  const turn = (list: Paged<{ id: string }>, back: boolean) =>
    void list.turn(back).then(draw, (caught: Error) => ((error = caught.message), draw()));

  function pager(list: Paged<{ id: string }>, label: string) {
    if (!list.page?.has_more && list.number === 1) return null;
    return html`<nav class="pager" aria-label=${label}>
      <button type="button" class="secondary small" ?disabled=${list.number === 1} @click=${() => turn(list, true)}>
        Newer
      </button>
      <span class="muted small">Page ${list.number}</span>
      <button type="button" class="secondary small" ?disabled=${!list.page?.has_more} @click=${() => turn(list, false)}>
        Older
      </button>
    </nav>`;
  }

  const receipt = (p: Purchase) =>
    p.receipt_url
      ? html`<a href=${p.receipt_url} target="_blank" rel="noopener noreferrer">Receipt</a>`
      : html`<span class="muted">–</span>`;

  function returnNotice(p: Purchase) {
    const what = `Your purchase of ${usd(p.amount)}`;
    let text: string;
    let tone = '';
    if (p.status === 'paid') text = `${what} is paid: ${usd(p.amount)} was added to your balance.`;
    else {
      tone = p.status === 'expired' || p.status === 'failed' || canceled ? 'failed' : 'pending-text';
      if (p.status === 'expired') text = `${what} expired before it was paid; nothing was charged.`;
      else if (p.status === 'failed') text = `${what} failed; nothing was credited.`;
      else if (canceled) text = `${what} was canceled at checkout; nothing was charged.`;
      else if (waitedTooLong)
        text = `${what} is still pending: Stripe has not confirmed the payment yet. It is credited as soon as Stripe does; reload this page to check.`;
      else text = `${what} is pending: waiting for Stripe to confirm the payment…`;
    }
    return html`<div class="purchase-notice ${p.status}" data-testid="purchase-status" data-status=${p.status}>
      <span class="badge purchase-${p.status}">${p.status}</span>
      <p class="status ${tone}" role="status">${text}</p>
      ${p.receipt_url ? html`<p class="small">${receipt(p)}</p>` : null}
    </div>`;
  }

  function form(o: Purchasing) {
    if (!o.available) return html`<p class="help" data-testid="purchasing-off">${o.unavailable_reason}</p>`;
    return html`<form class="grid-form" @submit=${buy}>
      <label for="purchase-amount">Amount to add (USD)</label>
      <input
        id="purchase-amount"
        name="amount"
        type="number"
        required
        min=${o.min_amount}
        max=${o.max_amount}
        step="0.01"
        inputmode="decimal"
        aria-describedby="purchase-help"
      />
      <p id="purchase-help" class="help">
        From ${usd(o.min_amount)} to ${usd(o.max_amount)} per purchase. You pay by card on Stripe's checkout page and
        come back here.
      </p>
      <div class="actions">
        <button type="submit" ?disabled=${busy}>${busy ? 'Opening checkout…' : 'Add credits'}</button>
      </div>
    </form>`;
  }

  const row = (p: Purchase) =>
    html`<tr>
      <td data-label="Date">${dateTime(p.created)}</td>
      <td data-label="Amount" class="num">${usd(p.amount)}</td>
      <td data-label="Status"><span class="badge purchase-${p.status}">${p.status}</span></td>
      <td data-label="Paid">${p.paid_at === null ? '' : dateTime(p.paid_at)}</td>
      <td data-label="Receipt">${receipt(p)}</td>
    </tr>`;

  function list(l: List<Purchase>) {
    if (!purchases.any) return html`<p class="muted">No purchases yet.</p>`;
    return html`<div class="table-wrap">
        <table id="purchases" class="cards-on-mobile">
          <caption class="visually-hidden">
            Credit purchases, newest first
          </caption>
          <thead>
            <tr>
              <th>Date</th>
              <th class="num">Amount</th>
              <th>Status</th>
              <th>Paid</th>
              <th>Receipt</th>
            </tr>
          </thead>
          <tbody>
            ${l.data.map(row)}
          </tbody>
        </table>
      </div>
      ${pager(purchases, 'Purchase pages')}`;
  }

  /** The badge colours of purchases: succeeded as paid. */
  const rechargeBadge = (status: Recharge['status']) => `badge purchase-${status === 'succeeded' ? 'paid' : status}`;

  function rechargeOutcome(r: Recharge) {
    if (r.status === 'succeeded') return `Credited ${dateTime(r.settled_at)}`;
    if (r.status === 'failed') {
      // Stored as `code: message`.
      const [code, ...message] = (r.failure_reason ?? 'the payment failed').split(': ');
      return message.length ? `Not credited (${code}): ${message.join(': ')}` : `Not credited: ${code}`;
    }
    return 'Waiting for Stripe to confirm the payment';
  }

  const rechargeRow = (r: Recharge) =>
    html`<tr>
      <td data-label="Date">${dateTime(r.created)}</td>
      <td data-label="Amount" class="num">${usd(r.amount)}</td>
      <td data-label="Status"><span class=${rechargeBadge(r.status)}>${r.status}</span></td>
      <td data-label="Stripe reference">
        ${r.payment_intent_id ? html`<code>${r.payment_intent_id}</code>` : html`<span class="muted">–</span>`}
      </td>
      <td data-label="Details">${rechargeOutcome(r)}</td>
      <td data-label="Receipt">
        ${r.receipt_url ? html`<a href=${r.receipt_url} target="_blank" rel="noopener noreferrer">Receipt</a>` : html`<span class="muted">–</span>`}
      </td>
    </tr>`;

  function rechargeList(l: List<Recharge>) {
    return html`<h3>Automatic recharges</h3>
      <div class="table-wrap">
        <table id="recharges" class="cards-on-mobile">
          <caption class="visually-hidden">
            Automatic recharges of your saved card, newest first
          </caption>
          <thead>
            <tr>
              <th>Date</th>
              <th class="num">Amount</th>
              <th>Status</th>
              <th>Stripe reference</th>
              <th>Details</th>
              <th>Receipt</th>
            </tr>
          </thead>
          <tbody>
            ${l.data.map(rechargeRow)}
          </tbody>
        </table>
      </div>
      ${pager(recharges, 'Recharge pages')}`;
  }

  function draw() {
    render(
      html`
        <section class="card" aria-labelledby="purchase-heading">
          <h2 id="purchase-heading">Add credits</h2>
          ${current ? returnNotice(current) : null} ${error ? html`<p class="error" role="alert">${error}</p>` : null}
          ${purchasing ? form(purchasing) : html`<p class="loading">Loading…</p>`}
          ${
            purchases.page && (purchasing?.available || purchases.any)
              ? html`<h3>Purchases</h3>
                  ${list(purchases.page)}`
              : null
          }
          ${recharges.page && recharges.any ? rechargeList(recharges.page) : null}
        </section>
      `,
      container,
    );
  }

  draw();
  void load();
  return () => clearTimeout(timer);
}
