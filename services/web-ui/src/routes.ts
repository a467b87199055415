// The app's pages: one file under src/pages plus one entry here. First match wins.
import type { Component } from 'svelte';
import type { RouteDef } from './lib/router.ts';
import AuthPage from './pages/AuthPage.svelte';
import ChatPage from './pages/ChatPage.svelte';
import SettingsPage from './pages/SettingsPage.svelte';
import PersonalizationPage from './pages/PersonalizationPage.svelte';
import AdminUsersPage from './pages/AdminUsersPage.svelte';
import AdminSettingsGeneralPage from './pages/AdminSettingsGeneralPage.svelte';
import AdminSettingsConnectionsPage from './pages/AdminSettingsConnectionsPage.svelte';
import AdminAuthenticationPage from './pages/AdminAuthenticationPage.svelte';
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
  // Admin panel (Open WebUI's /admin/users, /admin/settings/<tab>; 0.10's Authentication page).
  { pattern: '/admin', component: AdminUsersPage, layout: 'app', admin: true },
  { pattern: '/admin/users', component: AdminUsersPage, layout: 'app', admin: true },
  { pattern: '/admin/settings', component: AdminSettingsGeneralPage, layout: 'app', admin: true },
  { pattern: '/admin/settings/general', component: AdminSettingsGeneralPage, layout: 'app', admin: true },
  { pattern: '/admin/settings/connections', component: AdminSettingsConnectionsPage, layout: 'app', admin: true },
  { pattern: '/admin/authentication', component: AdminAuthenticationPage, layout: 'app', admin: true },
  { pattern: '/admin/*', component: NotFoundPage, layout: 'app', admin: true },
  { pattern: '/workspace/knowledge', component: KnowledgePage, layout: 'app' },
  { pattern: '/workspace/knowledge/create', component: KnowledgeCreatePage, layout: 'app' },
  { pattern: '/workspace/knowledge/:id', component: KnowledgeBasePage, layout: 'app' },
  { pattern: '/*', component: NotFoundPage, layout: 'app' },
];
