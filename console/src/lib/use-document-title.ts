import { useEffect } from 'react';

const SITE = 'Console · Prediction service';

/** The tab's title names the page (and what it shows), so tabs, bookmarks and history entries can be told apart. */
export function useDocumentTitle(page: string | null | undefined): void {
  useEffect(() => {
    document.title = page ? `${page} · ${SITE}` : SITE;
  }, [page]);
}
