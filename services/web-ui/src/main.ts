import { mount } from 'svelte';
import App from './App.svelte';
import './app.css';
import { get } from 'svelte/store';
import { applyTheme, theme } from './lib/ui.ts';

// Before the first paint, so a dark theme never flashes light.
applyTheme(get(theme));

const target = document.getElementById('app');
if (!target) throw new Error('#app missing from index.html');
mount(App, { target });
