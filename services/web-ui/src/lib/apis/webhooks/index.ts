// Admin → Settings → Webhooks: the registry (Open WebUI 0.10.2's /api/events/webhooks) and the
// delivery log and control the dispatcher adds (deliveries, test, replay). Types from the catalog.
import { api, type Body, type Reply } from '../client.ts';

export type Webhook = Reply<'webhooks.list'>[number];
export type WebhookCreated = Reply<'webhooks.create'>;
export type WebhookDelivery = Reply<'webhooks.deliveries'>[number];
export type WebhookFields = Body<'webhooks.create'>;

const base = '/api/events/webhooks';
const one = (id: string) => `${base}/${encodeURIComponent(id)}`;

export const listWebhooks = (): Promise<Webhook[]> => api.get<Webhook[]>(base);
export const createWebhook = (f: WebhookFields): Promise<WebhookCreated> => api.post<WebhookCreated>(base, f);
export const updateWebhook = (id: string, f: Body<'webhooks.update'>): Promise<Webhook> => api.put<Webhook>(one(id), f);
export const deleteWebhook = (id: string): Promise<Reply<'webhooks.delete'>> => api.del<Reply<'webhooks.delete'>>(one(id));
export const testWebhook = (id: string): Promise<Reply<'webhooks.test'>> => api.post<Reply<'webhooks.test'>>(`${one(id)}/test`);
export const listDeliveries = (id: string): Promise<WebhookDelivery[]> => api.get<WebhookDelivery[]>(`${one(id)}/deliveries`, { query: { limit: 20 } });
export const replayDelivery = (id: string, deliveryId: string): Promise<Reply<'webhooks.redeliver'>> =>
  api.post<Reply<'webhooks.redeliver'>>(`${one(id)}/deliveries/${encodeURIComponent(deliveryId)}/replay`);
