import { Link, useSearchParams } from 'react-router';
import { get } from '../api/client';
import type { Model, Page } from '../api/types';
import { ErrorNotice, Loading } from '../components/feedback';
import { formatDate, formatNumber } from '../lib/format';
import { useResource } from '../lib/use-resource';
import { useDocumentTitle } from '../lib/use-document-title';

export function Models() {
  useDocumentTitle('Models');
  const [params, setParams] = useSearchParams();
  const archived = params.get('status') === 'archived';
  const models = useResource((signal) => get<Page<Model>>('/v1/models', { status: archived ? 'archived' : undefined, limit: 200 }, signal), [archived]);
  return (
    <>
      <div className="page-head">
        <h1>Models</h1>
        <Link className="button" to="/models/new">
          New model
        </Link>
      </div>
      <div className="tabs" role="group" aria-label="Which models">
        <button type="button" aria-pressed={!archived} className={archived ? 'secondary' : ''} onClick={() => setParams({})}>
          Serving
        </button>
        <button type="button" aria-pressed={archived} className={archived ? '' : 'secondary'} onClick={() => setParams({ status: 'archived' })}>
          Archived
        </button>
      </div>
      <ErrorNotice error={models.error} />
      {models.loading && !models.data && <Loading what="models" />}
      {models.data && models.data.data.length === 0 && (
        <p>{archived ? 'No archived model.' : 'No model yet. Create one from a CSV with the column to predict.'}</p>
      )}
      {models.data && models.data.data.length > 0 && (
        <div className="table-scroll" tabIndex={0} role="region" aria-label="Models">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Target</th>
                <th scope="col">Task</th>
                <th scope="col">Version</th>
                <th scope="col">Validation</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {models.data.data.map((m) => (
                <tr key={m.id}>
                  <td>
                    <Link to={`/models/${m.id}`}>{m.name}</Link>
                  </td>
                  <td>{m.target}</td>
                  <td>{m.task}</td>
                  <td>{m.version ? `v${m.version.number}` : '—'}</td>
                  <td>{m.version ? `${m.version.validation.metric} ${formatNumber(m.version.validation.score)}` : '—'}</td>
                  <td>{formatDate(m.created_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
