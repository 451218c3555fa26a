import type { Page } from 'playwright-core';

/**
 * The console's stored refresh token (console/src/api/session.ts keeps it in IndexedDB, database
 * `console`, store `session`, key `refresh-token`, and a `console.signed-in` flag in localStorage), read
 * and written from the tests as another client of the same session would. Evaluated as a string: the
 * page's globals are not typed in the tests' tsconfig.
 */
const inStore = (mode: 'readonly' | 'readwrite', token: string | null): string => `new Promise((resolve, reject) => {
  const open = indexedDB.open('console');
  open.onupgradeneeded = () => open.result.createObjectStore('session');
  open.onerror = () => reject(open.error);
  open.onsuccess = () => {
    const tx = open.result.transaction('session', ${JSON.stringify(mode)});
    const store = tx.objectStore('session');
    const request = ${mode === 'readonly' ? `store.get('refresh-token')` : `store.put(${JSON.stringify(token)}, 'refresh-token')`};
    tx.oncomplete = () => { open.result.close(); resolve(request.result ?? null); };
    tx.onerror = () => reject(tx.error);
  };
})`;

export function storedRefreshToken(page: Page): Promise<string | null> {
  return page.evaluate<string | null>(inStore('readonly', null));
}

/** Stores `token` as the console's refresh token (as a renewal by another client would have left it). */
export async function storeRefreshToken(page: Page, token: string): Promise<void> {
  await page.evaluate(inStore('readwrite', token));
  await page.evaluate(`localStorage.setItem('console.signed-in', '1')`);
}
