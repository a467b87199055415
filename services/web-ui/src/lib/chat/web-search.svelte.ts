// The message box's web-search toggle (Open WebUI's `webSearchEnabled`): while on, every
// completion this tab sends carries `features: {web_search: true}` and the server searches the
// user's message first. Per tab, off at load, as Open WebUI's is per chat input.
export const webSearch = $state({ on: false });
