import { mount } from 'svelte';
import App from './App.svelte';
import './app.css';
import { get } from 'svelte/store';
import { applyTheme, theme } from './lib/ui.ts';
import { loadMarkdown } from './lib/chat/markdown-lazy.ts';

// Before the first paint, so a dark theme never flashes light.
applyTheme(get(theme));

const target = document.getElementById('app');
if (!target) throw new Error('#app missing from index.html');
mount(App, { target });
// The Markdown renderer is its own chunk (markdown-lazy.ts): fetched now, beside the API calls,
// so it is there when the first message is shown.
void loadMarkdown().catch(() => {});
