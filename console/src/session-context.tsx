import { createContext, useCallback, useContext, useEffect, useState, type ReactNode } from 'react';
import { get, selectWorkspace, selectedWorkspace } from './api/client';
import { asApiError, type ApiError } from './api/errors';
import { hasSession, onSessionChange } from './api/session';
import type { Profile } from './api/types';

interface SessionState {
  signedIn: boolean;
  /** Why the session ended (shown on the sign-in page). */
  endedBecause: string | null;
  profile: Profile | null;
  profileError: ApiError | null;
  reloadProfile: () => void;
  workspaceId: string | null;
  /** Changes when the pages must reload as another workspace's (a switch, or a stale choice replaced). */
  workspaceGeneration: number;
  setWorkspace: (id: string) => void;
}

const SessionContext = createContext<SessionState | null>(null);

export function useSession(): SessionState {
  const state = useContext(SessionContext);
  if (!state) throw new Error('useSession outside SessionProvider');
  return state;
}

export function SessionProvider({ children }: { children: ReactNode }) {
  const [signedIn, setSignedIn] = useState(hasSession);
  const [endedBecause, setEndedBecause] = useState<string | null>(null);
  const [profile, setProfile] = useState<Profile | null>(null);
  const [profileError, setProfileError] = useState<ApiError | null>(null);
  const [generation, setGeneration] = useState(0);
  const [workspaceId, setWorkspaceId] = useState(selectedWorkspace);
  const [workspaceGeneration, setWorkspaceGeneration] = useState(0);

  useEffect(
    () =>
      onSessionChange((now, reason) => {
        setSignedIn(now);
        if (!now) {
          setProfile(null);
          setEndedBecause(reason ?? null);
        } else setEndedBecause(null);
      }),
    [],
  );

  useEffect(() => {
    if (!signedIn) return;
    let live = true;
    get<Profile>('/v1/auth/me').then(
      (p) => {
        if (!live) return;
        setProfile(p);
        setProfileError(null);
        // A workspace remembered from another account (or since renamed away) falls back to the oldest.
        const chosen = selectedWorkspace();
        if (!chosen || !p.workspaces.some((w) => w.id === chosen)) {
          selectWorkspace(p.workspaces[0]?.id ?? null);
          setWorkspaceId(p.workspaces[0]?.id ?? null);
          // Without a choice the pages already read the oldest workspace (no header): nothing to reload,
          // and remounting them would throw away what the user did meanwhile (a chosen file).
          if (chosen) setWorkspaceGeneration((g) => g + 1);
        }
      },
      (err: unknown) => {
        if (live) setProfileError(asApiError(err));
      },
    );
    return () => {
      live = false;
    };
  }, [signedIn, generation]);

  const reloadProfile = useCallback(() => setGeneration((g) => g + 1), []);
  const setWorkspace = useCallback((id: string) => {
    selectWorkspace(id);
    setWorkspaceId(id);
    setWorkspaceGeneration((g) => g + 1);
  }, []);

  return (
    <SessionContext.Provider value={{ signedIn, endedBecause, profile, profileError, reloadProfile, workspaceId, workspaceGeneration, setWorkspace }}>{children}</SessionContext.Provider>
  );
}
