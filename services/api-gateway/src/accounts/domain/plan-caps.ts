/** What a plan allows at once, its own values or the gateway's defaults. */
export interface PlanCaps {
  keys: number;
  webhooks: number;
  streams: number;
}

/** The caps a plan sets for itself (a plan document's optional fields). */
export interface PlanCapFields {
  max_keys?: number;
  max_webhooks?: number;
  max_streams?: number;
}

export const planCaps = (plan: PlanCapFields, defaults: PlanCaps): PlanCaps => ({
  keys: plan.max_keys ?? defaults.keys,
  webhooks: plan.max_webhooks ?? defaults.webhooks,
  streams: plan.max_streams ?? defaults.streams,
});
