import { StrictMode, type ReactNode } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter, Navigate, Route, Routes, useLocation } from 'react-router';
import { Layout } from './components/Layout';
import { Account } from './pages/Account';
import { ApiKeys } from './pages/ApiKeys';
import { Billing } from './pages/Billing';
import { Forecast } from './pages/Forecast';
import { ModelPage } from './pages/ModelPage';
import { Models } from './pages/Models';
import { NewModel } from './pages/NewModel';
import { SignIn } from './pages/SignIn';
import { Usage } from './pages/Usage';
import { Webhooks } from './pages/Webhooks';
import { SessionProvider, useSession } from './session-context';
import './styles.css';

/** Pages behind the session: without one, the sign-in page, which comes back here afterwards. */
function RequireSession({ children }: { children: ReactNode }) {
  const { signedIn } = useSession();
  const location = useLocation();
  if (!signedIn) return <Navigate to="/sign-in" replace state={{ from: location.pathname + location.search }} />;
  return children;
}

function App() {
  return (
    <Routes>
      <Route path="/sign-in" element={<SignIn />} />
      <Route
        element={
          <RequireSession>
            <Layout />
          </RequireSession>
        }
      >
        <Route path="/models" element={<Models />} />
        <Route path="/models/new" element={<NewModel />} />
        <Route path="/models/:id" element={<ModelPage />} />
        <Route path="/forecast" element={<Forecast />} />
        <Route path="/usage" element={<Usage />} />
        <Route path="/keys" element={<ApiKeys />} />
        <Route path="/webhooks" element={<Webhooks />} />
        <Route path="/billing" element={<Billing />} />
        <Route path="/account" element={<Account />} />
      </Route>
      <Route path="*" element={<Navigate to="/models" replace />} />
    </Routes>
  );
}

const root = document.getElementById('root');
if (!root) throw new Error('no #root element');
createRoot(root).render(
  <StrictMode>
    <BrowserRouter basename="/console">
      <SessionProvider>
        <App />
      </SessionProvider>
    </BrowserRouter>
  </StrictMode>,
);
