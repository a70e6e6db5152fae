/** The dashboard's router: one page per hash route (#/keys, #/webhooks/{id}, …). */
import { del, get, setCsrf } from './api.js';
import { accountView } from './pages/account.js';
import { authView } from './pages/auth.js';
import { deliveriesView } from './pages/deliveries.js';
import { keysView } from './pages/keys.js';
import { signalView, signalsView } from './pages/signals.js';
import { statsView } from './pages/stats.js';
import { webhooksView } from './pages/webhooks.js';
import { h } from './dom.js';
import {
  act,
  announceNext,
  goToLogin,
  leavePage,
  page,
  sayCarried,
  showChrome,
  state,
  type SessionInfo,
} from './shell.js';
import { pathOf } from './generated/routes.js';

async function route(): Promise<void> {
  leavePage();
  const [path] = location.hash.replace(/^#/, '').split('?');
  const parts = (path ?? '').split('/').filter(Boolean);
  if (!state.session && parts[0] !== 'login' && parts[0] !== 'signup') {
    const s = await get<SessionInfo>(pathOf('dashboardSession')).catch(() => null);
    if (s) {
      state.session = s;
      setCsrf(s.csrf_token);
    } else {
      goToLogin();
      return;
    }
  }
  // A message belongs to the page it was said on; one meant for this page was carried here.
  sayCarried();
  showChrome();
  switch (parts[0]) {
    case 'login':
      return authView('login');
    case 'signup':
      return authView('signup');
    case 'webhooks':
      return parts[1] ? deliveriesView(parts[1]) : webhooksView();
    case 'signals':
      return parts[1] ? signalView(parts[1]) : signalsView();
    case 'stats':
      return statsView();
    case 'account':
      return accountView();
    case undefined:
    case 'keys':
      return keysView();
    default:
      // A mistyped or outdated link says so, instead of showing another page as if it were it.
      return page(
        'Page not found',
        h('p', {}, `There is no page at ${location.hash}. `, h('a', { href: '#/keys' }, 'Go to API keys')),
      );
  }
}

document.getElementById('logout')!.addEventListener('click', async () => {
  await act(() => del(pathOf('dashboardLogout')));
  announceNext('Logged out.');
  state.session = null;
  showChrome();
  location.hash = '#/login';
});
window.addEventListener('hashchange', () => void route());
void route();
