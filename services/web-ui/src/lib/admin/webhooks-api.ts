// Admin → Settings → Webhooks: the registry (Open WebUI 0.10.2's /api/events/webhooks) and the
// delivery log and control the dispatcher adds (deliveries, test, replay). Types from contracts.
import type { z } from 'zod';
import type { Webhook as WebhookSchema, WebhookCreated as WebhookCreatedSchema, WebhookDelivery as DeliverySchema } from '@gatehouse/contracts';
import { api } from '../api.ts';

export type Webhook = z.infer<typeof WebhookSchema>;
export type WebhookCreated = z.infer<typeof WebhookCreatedSchema>;
export type WebhookDelivery = z.infer<typeof DeliverySchema>;
export interface WebhookFields {
  name: string;
  url: string;
  enabled: boolean;
  events: string[];
}

const base = '/api/events/webhooks';
const one = (id: string) => `${base}/${encodeURIComponent(id)}`;

export const listWebhooks = (): Promise<Webhook[]> => api.get<Webhook[]>(base);
export const createWebhook = (f: WebhookFields): Promise<WebhookCreated> => api.post<WebhookCreated>(base, f);
export async function updateWebhook(id: string, f: Partial<WebhookFields>): Promise<Webhook> {
  const res = await api.request('PUT', one(id), f);
  return (await res.json()) as Webhook;
}
export const deleteWebhook = (id: string): Promise<{ status: true }> => api.del(one(id));
export const testWebhook = (id: string): Promise<{ status: true; delivery_id: string }> => api.post(`${one(id)}/test`);
export const listDeliveries = (id: string): Promise<WebhookDelivery[]> => api.get<WebhookDelivery[]>(`${one(id)}/deliveries`, { query: { limit: 20 } });
export const replayDelivery = (id: string, deliveryId: string): Promise<{ status: true; delivery_id: string }> =>
  api.post(`${one(id)}/deliveries/${encodeURIComponent(deliveryId)}/replay`);

/** `chat.*, auth.login` → ['chat.*', 'auth.login']; empty → every event. */
export function parseEvents(text: string): string[] {
  const list = text.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);
  return list.length ? list : ['*'];
}
