/**
 * Members: who belongs to the account and with which role. Owners and admins (capability `members`) change roles,
 * remove members, invite by email (the link is shown here when the gateway sends no email) and revoke invitations;
 * everyone may leave the account (not its last owner: the server says so); an owner may close it.
 */
import { html, render } from 'lit-html';
import { ApiError, api } from '../api.js';
import type { Page } from '../app.js';
import { textField } from '../forms.js';
import { closeAccountSection } from './close-account.js';

interface Member {
  user_id: string;
  email: string;
  role: string;
  joined: number;
}
interface Invitation {
  id: string;
  email: string;
  role: string;
  expires: number;
  link?: string;
}

const ROLES = ['owner', 'admin', 'member', 'billing'] as const;
const day = (seconds: number) => new Date(seconds * 1000).toISOString().slice(0, 10);

export const membersPage: Page = (container, app) => {
  const manages = app.session.capabilities?.includes('members') ?? false;
  const isOwner = app.session.role === 'owner';
  const closes = app.session.capabilities?.includes('delete') ?? false;
  let members: Member[] = [];
  let invitations: Invitation[] = [];
  let link = '';
  let message = '';
  let error = '';

  const failed = (caught: unknown, fallback: string) => {
    error = caught instanceof ApiError ? caught.message : fallback;
    message = '';
  };

  async function load() {
    if (!manages) return draw();
    try {
      members = (await api<{ data: Member[] }>('GET', '/members')).data;
      invitations = (await api<{ data: Invitation[] }>('GET', '/members/invitations')).data;
    } catch (caught) {
      failed(caught, 'The members could not be loaded.');
    }
    draw();
  }

  async function act(work: () => Promise<unknown>, done: string, fallback: string) {
    try {
      await work();
      error = '';
      message = done;
    } catch (caught) {
      failed(caught, fallback);
    }
    await load();
  }

  async function invite(event: SubmitEvent) {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    const email = textField(form, 'email');
    link = '';
    await act(
      async () => {
        const made = await api<Invitation>('POST', '/members/invitations', { email, role: textField(form, 'role') });
        link = made.link ?? '';
        (event.target as HTMLFormElement).reset();
      },
      `${email} is invited.`,
      'The invitation could not be made.',
    );
  }

  async function leaveAccount() {
    if (!window.confirm('Leave this account? Your keys in it are revoked.')) return;
    try {
      await api('POST', '/members/leave');
      location.assign('/dashboard/');
    } catch (caught) {
      failed(caught, 'You could not leave the account.');
      draw();
    }
  }

  function memberRow(m: Member) {
    const mayTouch = m.role !== 'owner' || isOwner;
    return html`<tr>
      <td>${m.email}</td>
      <td>
        <select
          aria-label=${`Role of ${m.email}`}
          ?disabled=${!mayTouch}
          @change=${(e: Event) =>
            void act(
              () => api('PATCH', `/members/${m.user_id}`, { role: (e.target as HTMLSelectElement).value }),
              `${m.email} is now ${(e.target as HTMLSelectElement).value}.`,
              'The role could not be changed.',
            )}
        >
          ${ROLES.filter((r) => r !== 'owner' || isOwner || m.role === 'owner').map(
            (r) => html`<option value=${r} ?selected=${r === m.role}>${r}</option>`,
          )}
        </select>
      </td>
      <td>${day(m.joined)}</td>
      <td>
        ${
          m.user_id === app.session.user?.id || !mayTouch
            ? null
            : html`<button
                type="button"
                class="danger small"
                @click=${() =>
                  window.confirm(`Remove ${m.email}? Their keys in this account are revoked.`) &&
                  void act(() => api('DELETE', `/members/${m.user_id}`), `${m.email} is removed.`, 'Could not remove.')}
              >
                Remove
              </button>`
        }
      </td>
    </tr>`;
  }

  function draw() {
    render(
      html`
        <h1>Members</h1>
        ${error ? html`<p class="error" role="alert">${error}</p>` : null}
        ${message ? html`<p class="success" role="status">${message}</p>` : null}
        ${
          manages
            ? html`<section class="card" aria-labelledby="members-heading">
                  <h2 id="members-heading">People in this account</h2>
                  <table id="members" class="cards-on-mobile">
                    <thead>
                      <tr>
                        <th>Email</th>
                        <th>Role</th>
                        <th>Joined</th>
                        <th><span class="visually-hidden">Actions</span></th>
                      </tr>
                    </thead>
                    <tbody>
                      ${members.map(memberRow)}
                    </tbody>
                  </table>
                </section>
                <section class="card" aria-labelledby="invite-heading">
                  <h2 id="invite-heading">Invite someone</h2>
                  <form class="grid-form" @submit=${invite}>
                    <label for="invite-email">Email</label>
                    <input id="invite-email" name="email" type="email" required />
                    <label for="invite-role">Role</label>
                    <select id="invite-role" name="role">
                      ${ROLES.filter((r) => r !== 'owner' || isOwner).map(
                        (r) => html`<option value=${r} ?selected=${r === 'member'}>${r}</option>`,
                      )}
                    </select>
                    <button type="submit">Invite</button>
                  </form>
                  ${
                    link
                      ? html`<p class="help">
                            This gateway sends no email: give them this link (it works once, for 7 days):
                          </p>
                          <input id="invite-link" readonly .value=${link} aria-label="Invitation link" />`
                      : null
                  }
                  ${
                    invitations.length
                      ? html`<h3>Pending invitations</h3>
                          <ul id="invitations">
                            ${invitations.map(
                              (i) =>
                                html`<li>
                                  ${i.email} (${i.role}), until ${day(i.expires)}
                                  <button
                                    type="button"
                                    class="secondary small"
                                    @click=${() =>
                                      void act(
                                        () => api('DELETE', `/members/invitations/${i.id}`),
                                        `The invitation of ${i.email} is revoked.`,
                                        'Could not revoke.',
                                      )}
                                  >
                                    Revoke
                                  </button>
                                </li>`,
                            )}
                          </ul>`
                      : null
                  }
                </section>`
            : html`<p class="muted">
                You are ${app.session.role} in this account; owners and admins manage its members.
              </p>`
        }
        <section class="card">
          <button type="button" class="secondary" id="leave" @click=${leaveAccount}>Leave this account</button>
        </section>
        <div id="close-account"></div>
      `,
      container,
    );
    const closing = container.querySelector<HTMLElement>('#close-account');
    if (closes && closing && !closing.hasChildNodes()) closeAccountSection(closing, app.session.email ?? '');
  }
  void load();
};
