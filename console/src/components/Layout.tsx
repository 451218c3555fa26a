import { useEffect, useRef, useState } from 'react';
import { Link, NavLink, Outlet, useLocation, useNavigate } from 'react-router';
import { signOut } from '../api/session';
import { useSession } from '../session-context';
import { formatInt } from '../lib/format';
import { ErrorNotice } from './feedback';

const NAV = [
  { to: '/models', label: 'Models' },
  { to: '/forecast', label: 'Forecast' },
  { to: '/usage', label: 'Usage' },
  { to: '/keys', label: 'API keys' },
  { to: '/webhooks', label: 'Webhooks' },
  { to: '/billing', label: 'Billing' },
  { to: '/account', label: 'Account' },
];

/** Skip link, banner with navigation and workspace, then the page in <main> (focused on navigation). */
export function Layout() {
  const { profile, profileError, workspaceId, workspaceGeneration, setWorkspace } = useSession();
  const navigate = useNavigate();
  const location = useLocation();
  const main = useRef<HTMLElement>(null);
  const [menuOpen, setMenuOpen] = useState(false);

  // A new page moves focus to its content, as a full page load would put it at the top.
  useEffect(() => {
    setMenuOpen(false);
    main.current?.focus({ preventScroll: true });
  }, [location.pathname]);

  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="banner">
        <div className="banner-row">
          <Link className="brand" to="/models">
            Prediction service
          </Link>
          <button type="button" className="menu-toggle secondary" aria-expanded={menuOpen} aria-controls="main-nav" onClick={() => setMenuOpen((o) => !o)}>
            Menu
          </button>
        </div>
        <nav id="main-nav" aria-label="Main" className={menuOpen ? 'open' : ''}>
          <ul>
            {NAV.map((item) => (
              <li key={item.to}>
                <NavLink to={item.to}>{item.label}</NavLink>
              </li>
            ))}
            <li>
              <a href="/docs">API reference</a>
            </li>
          </ul>
        </nav>
        <div className="session-bar">
          {profile && (
            <>
              <label htmlFor="workspace-select">Workspace</label>
              <select
                id="workspace-select"
                value={workspaceId ?? ''}
                onChange={(e) => {
                  setWorkspace(e.target.value);
                  void navigate(location.pathname.startsWith('/models/') ? '/models' : location.pathname);
                }}
              >
                {profile.workspaces.map((w) => (
                  <option key={w.id} value={w.id}>
                    {w.name}
                  </option>
                ))}
              </select>
              <span className="credits" data-testid="credits-left">
                {formatInt(profile.credits.remaining)} credits left
              </span>
              <span className="muted small">{profile.email}</span>
            </>
          )}
          <button
            type="button"
            className="secondary"
            onClick={() => {
              void signOut().then(() => navigate('/sign-in'));
            }}
          >
            Sign out
          </button>
        </div>
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        <ErrorNotice error={profileError} />
        {/* Pages of another workspace are other data: remount them on a switch. */}
        <Outlet key={workspaceGeneration} />
      </main>
    </>
  );
}
