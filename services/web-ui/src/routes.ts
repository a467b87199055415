// The app's pages: one file under src/pages plus one entry here. First match wins.
import type { Component } from 'svelte';
import type { RouteDef } from './lib/router.ts';
import AuthPage from './pages/AuthPage.svelte';
import ChatPage from './pages/ChatPage.svelte';
import SettingsPage from './pages/SettingsPage.svelte';
import PersonalizationPage from './pages/PersonalizationPage.svelte';
import AdminPage from './pages/AdminPage.svelte';
import KnowledgePage from './pages/KnowledgePage.svelte';
import KnowledgeCreatePage from './pages/KnowledgeCreatePage.svelte';
import KnowledgeBasePage from './pages/KnowledgeBasePage.svelte';
import NotFoundPage from './pages/NotFoundPage.svelte';

// Pages receive `params` (from `:name` segments; `rest` for a trailing `*`).
export type PageComponent = Component<{ params: Record<string, string> }>;

export const routes: RouteDef<PageComponent>[] = [
  { pattern: '/auth', component: AuthPage, layout: 'bare' },
  { pattern: '/', component: ChatPage, layout: 'app' },
  { pattern: '/c/:id', component: ChatPage, layout: 'app' },
  { pattern: '/settings', component: SettingsPage, layout: 'app' },
  { pattern: '/settings/personalization', component: PersonalizationPage, layout: 'app' },
  { pattern: '/admin/*', component: AdminPage, layout: 'app', admin: true },
  { pattern: '/workspace/knowledge', component: KnowledgePage, layout: 'app' },
  { pattern: '/workspace/knowledge/create', component: KnowledgeCreatePage, layout: 'app' },
  { pattern: '/workspace/knowledge/:id', component: KnowledgeBasePage, layout: 'app' },
  { pattern: '/*', component: NotFoundPage, layout: 'app' },
];
