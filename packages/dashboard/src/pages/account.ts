/** The account page: who is signed in, and the password. */
import { post, setCsrf } from '../api.js';
import { field, h } from '../dom.js';
import { state, act, onSubmit, page, type SessionInfo } from '../shell.js';
import { pathOf } from '../generated/routes.js';

export async function accountView(): Promise<void> {
  const current = h('input', {
    type: 'password',
    name: 'current_password',
    autocomplete: 'current-password',
    required: true,
  });
  const next = h('input', {
    type: 'password',
    name: 'new_password',
    autocomplete: 'new-password',
    required: true,
    minlength: 12,
  });
  const form = h(
    'form',
    {},
    field('Current password', current),
    field('New password', next, 'At least 12 characters.'),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Change password')),
  );
  onSubmit(form, async () => {
    const info = await act(
      () =>
        post<SessionInfo>(pathOf('dashboardChangePassword'), {
          current_password: current.value,
          new_password: next.value,
        }),
      'Password changed. Every other session of this account has been logged out.',
      form,
    );
    if (!info) return;
    state.session = info;
    setCsrf(info.csrf_token);
    form.reset();
  });
  page(
    'Account',
    h(
      'section',
      { 'aria-labelledby': 'acct-h' },
      h('h2', { id: 'acct-h' }, 'Signed in as'),
      h('p', {}, state.session!.account.email),
    ),
    h('section', { 'aria-labelledby': 'pw-h' }, h('h2', { id: 'pw-h' }, 'Change password'), form),
  );
}
