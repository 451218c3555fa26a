import type { Model, ModelVersion } from '../db/entities';

// The contract's shapes of domain values; services never build HTTP bodies.

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export function presentVersion(version: ModelVersion, model: Model) {
  return {
    id: version.id,
    number: version.number,
    engine: { id: version.engineId, version: version.engineVersion },
    format_version: version.formatVersion,
    trigger: version.trigger,
    serving: model.currentVersion === version.number && model.status === 'serving',
    context_rows: version.contextRows,
    outcomes_folded: version.outcomesFolded,
    validation: version.validation,
    ...(model.explain && version.topFactors ? { top_factors: version.topFactors } : {}),
    created_at: version.createdAt.toISOString(),
  };
}

export function presentModel(model: Model, current: ModelVersion | null) {
  return {
    id: model.id,
    name: model.name,
    target: model.target,
    task: model.task,
    engine: model.engineId,
    status: model.status,
    feature_columns: model.featureColumns,
    explain: model.explain,
    auto_update: model.autoUpdate,
    version: current ? presentVersion(current, model) : null,
    versions_count: model.currentVersion ?? 0,
    workspace_id: model.workspace.id,
    created_at: model.createdAt.toISOString(),
    updated_at: model.updatedAt.toISOString(),
    archived_at: iso(model.archivedAt),
  };
}
