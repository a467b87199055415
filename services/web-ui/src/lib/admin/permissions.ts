// A group's permissions as Open WebUI 0.10 groups them (`permissions.<section>.<key>`): the
// switches the admin's group dialog shows, in its order. A key left out of a group's object grants
// nothing beyond the defaults.
export interface PermissionSwitch {
  section: string;
  key: string;
  label: string;
}

export const PERMISSION_SECTIONS: { section: string; title: string; switches: PermissionSwitch[] }[] = [
  {
    section: 'workspace',
    title: 'Workspace Permissions',
    switches: [
      { section: 'workspace', key: 'models', label: 'Models Access' },
      { section: 'workspace', key: 'knowledge', label: 'Knowledge Access' },
      { section: 'workspace', key: 'prompts', label: 'Prompts Access' },
      { section: 'workspace', key: 'tools', label: 'Tools Access' },
    ],
  },
  {
    section: 'chat',
    title: 'Chat Permissions',
    switches: [
      { section: 'chat', key: 'file_upload', label: 'Allow File Upload' },
      { section: 'chat', key: 'delete', label: 'Allow Chat Delete' },
      { section: 'chat', key: 'edit', label: 'Allow Chat Edit' },
      { section: 'chat', key: 'temporary', label: 'Allow Temporary Chat' },
    ],
  },
  {
    section: 'features',
    title: 'Features Permissions',
    switches: [
      { section: 'features', key: 'web_search', label: 'Web Search' },
      { section: 'features', key: 'image_generation', label: 'Image Generation' },
      { section: 'features', key: 'code_interpreter', label: 'Code Interpreter' },
    ],
  },
];

/** Switch states keyed `section.key`. */
export type Perms = Record<string, boolean>;

/** The switches' states from a stored permissions object (anything not `true` is off). */
export function readPermissions(stored: Record<string, unknown> | null | undefined): Perms {
  const out: Perms = {};
  for (const { section, switches } of PERMISSION_SECTIONS) {
    const s = stored?.[section];
    for (const { key } of switches) out[`${section}.${key}`] = !!s && typeof s === 'object' && (s as Record<string, unknown>)[key] === true;
  }
  return out;
}

/** The stored object with the switches applied (keys the dialog does not show are kept). */
export function writePermissions(stored: Record<string, unknown> | null | undefined, perms: Perms): Record<string, unknown> {
  const out: Record<string, unknown> = { ...(stored ?? {}) };
  for (const [path, on] of Object.entries(perms)) {
    const [section, key] = path.split('.') as [string, string];
    const prev = out[section] && typeof out[section] === 'object' ? (out[section] as Record<string, unknown>) : {};
    out[section] = { ...prev, [key]: on };
  }
  return out;
}
