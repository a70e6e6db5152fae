/** The log-in and sign-up pages. */
import { ApiError, get, post, setCsrf } from '../api.js';
import { field, h, replace } from '../dom.js';
import {
  state,
  announceNext,
  act,
  onSubmit,
  page,
  pageAfterLogin,
  showChrome,
  type SessionInfo,
} from '../shell.js';
import { pathOf } from '../generated/routes.js';

export async function authView(mode: 'login' | 'signup'): Promise<void> {
  const config = await act(() => get<{ signup_enabled: boolean }>(pathOf('dashboardConfig')));
  const canSignUp = config?.signup_enabled ?? false;
  if (mode === 'signup' && !canSignUp) {
    page(
      'Sign up',
      h('p', {}, 'Sign-up is closed on this installation; ask the operator for an account.'),
      h('p', {}, h('a', { href: '#/login' }, 'Log in')),
    );
    return;
  }
  const email = h('input', { type: 'email', name: 'email', autocomplete: 'email', required: true });
  const password = h('input', {
    type: 'password',
    name: 'password',
    autocomplete: mode === 'login' ? 'current-password' : 'new-password',
    required: true,
    minlength: mode === 'signup' ? 12 : 1,
  });
  const form = h(
    'form',
    { class: 'card', novalidate: false },
    field('Email', email),
    field('Password', password, mode === 'signup' ? 'At least 12 characters.' : undefined),
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'submit' }, mode === 'login' ? 'Log in' : 'Create account'),
    ),
  );
  // Making an account takes a few seconds (the password is hashed slowly on purpose): say so.
  const progress = h('p', { class: 'muted', role: 'status' });
  form.append(progress);
  onSubmit(form, async () => {
    const body = { email: email.value.trim(), password: password.value };
    replace(progress, mode === 'login' ? 'Logging in…' : 'Creating your account: this takes a few seconds…');
    let refusal: unknown;
    const info = await act(
      () =>
        post<SessionInfo>(pathOf(mode === 'login' ? 'dashboardLogin' : 'dashboardSignup'), body).catch(
          (err: unknown) => {
            refusal = err;
            throw err;
          },
        ),
      undefined,
      form,
    );
    replace(progress);
    if (!info) {
      // An email that already has an account: the way on is to log in.
      const box = form.querySelector<HTMLElement>(':scope > .form-error');
      if (mode === 'signup' && box && refusal instanceof ApiError && refusal.code === 'CONFLICT') {
        box.hidden = false;
        box.append(' ', h('a', { href: '#/login' }, 'Log in instead'));
      }
      return;
    }
    state.session = info;
    setCsrf(info.csrf_token);
    showChrome();
    announceNext(mode === 'login' ? 'Logged in.' : 'Account created. Create your first API key below.');
    location.hash = mode === 'login' ? pageAfterLogin() : '#/keys';
  });
  page(
    mode === 'login' ? 'Log in' : 'Sign up',
    form,
    mode === 'login'
      ? canSignUp
        ? h('p', {}, 'No account yet? ', h('a', { href: '#/signup' }, 'Sign up'))
        : null
      : h('p', {}, 'Have an account? ', h('a', { href: '#/login' }, 'Log in')),
  );
}
