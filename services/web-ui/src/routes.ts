// The app's pages: one file under src/pages plus one entry here. First match wins.
// The chat page is in the entry chunk (it is what most visits open); every other page is its own
// chunk, loaded when its route is first matched: `component: lazy(() => import('./pages/X.svelte'))`.
import type { Component } from 'svelte';
import type { RouteDef } from './lib/router.ts';
import ChatPage from './pages/ChatPage.svelte';

// Pages receive `params` (from `:name` segments; `rest` for a trailing `*`).
export type PageComponent = Component<{ params: Record<string, string> }>;
/** A page loaded on first use (App.svelte resolves it, then keeps it). */
export interface LazyPage {
  load: () => Promise<{ default: PageComponent }>;
}
export type PageEntry = PageComponent | LazyPage;
const lazy = (load: LazyPage['load']): LazyPage => ({ load });
export const isLazy = (p: PageEntry): p is LazyPage => typeof p === 'object' && p !== null && 'load' in p;

export const routes: RouteDef<PageEntry>[] = [
  { pattern: '/auth', component: lazy(() => import('./pages/AuthPage.svelte')), layout: 'bare' },
  { pattern: '/', component: ChatPage, layout: 'app' },
  { pattern: '/c/:id', component: ChatPage, layout: 'app' },
  // A share link's read-only snapshot (Open WebUI's /s/[id]); full page, the page itself asks for a session.
  { pattern: '/s/:id', component: lazy(() => import('./pages/SharedChatPage.svelte')), layout: 'bare' },
  { pattern: '/settings', component: lazy(() => import('./pages/SettingsPage.svelte')), layout: 'app' },
  { pattern: '/settings/:tab', component: lazy(() => import('./pages/SettingsPage.svelte')), layout: 'app' },
  // Admin panel (Open WebUI's /admin/users, /admin/settings/<tab>; 0.10's Authentication page).
  { pattern: '/admin', component: lazy(() => import('./pages/AdminUsersPage.svelte')), layout: 'app', admin: true },
  { pattern: '/admin/users', component: lazy(() => import('./pages/AdminUsersPage.svelte')), layout: 'app', admin: true },
  { pattern: '/admin/users/overview', component: lazy(() => import('./pages/AdminUsersPage.svelte')), layout: 'app', admin: true },
  { pattern: '/admin/users/groups', component: lazy(() => import('./pages/AdminGroupsPage.svelte')), layout: 'app', admin: true },
  { pattern: '/admin/evaluations', component: lazy(() => import('./pages/AdminEvaluationsPage.svelte')), layout: 'app', admin: true },
  { pattern: '/admin/evaluations/:tab', component: lazy(() => import('./pages/AdminEvaluationsPage.svelte')), layout: 'app', admin: true },
  { pattern: '/admin/settings', component: lazy(() => import('./pages/AdminSettingsGeneralPage.svelte')), layout: 'app', admin: true },
  { pattern: '/admin/settings/general', component: lazy(() => import('./pages/AdminSettingsGeneralPage.svelte')), layout: 'app', admin: true },
  { pattern: '/admin/settings/connections', component: lazy(() => import('./pages/AdminSettingsConnectionsPage.svelte')), layout: 'app', admin: true },
  { pattern: '/admin/settings/webhooks', component: lazy(() => import('./pages/AdminWebhooksPage.svelte')), layout: 'app', admin: true },
  { pattern: '/admin/authentication', component: lazy(() => import('./pages/AdminAuthenticationPage.svelte')), layout: 'app', admin: true },
  { pattern: '/admin/*', component: lazy(() => import('./pages/NotFoundPage.svelte')), layout: 'app', admin: true },
  { pattern: '/workspace/knowledge', component: lazy(() => import('./pages/KnowledgePage.svelte')), layout: 'app' },
  { pattern: '/workspace/knowledge/create', component: lazy(() => import('./pages/KnowledgeCreatePage.svelte')), layout: 'app' },
  { pattern: '/workspace/knowledge/:id', component: lazy(() => import('./pages/KnowledgeBasePage.svelte')), layout: 'app' },
  { pattern: '/workspace/models', component: lazy(() => import('./pages/ModelsPage.svelte')), layout: 'app' },
  { pattern: '/workspace/prompts', component: lazy(() => import('./pages/PromptsPage.svelte')), layout: 'app' },
  { pattern: '/*', component: lazy(() => import('./pages/NotFoundPage.svelte')), layout: 'app' },
];
