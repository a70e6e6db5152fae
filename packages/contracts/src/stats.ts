import { z } from 'zod';
import { SIGNAL_TYPES, STATS_PERIODS, type SignalType } from './enums';

const typeStats = z.strictObject({
  total: z.number().int().nonnegative(),
  winners: z.number().int().nonnegative(),
  win_rate: z
    .number()
    .describe(
      'Percent, 0–100 (not a fraction): winners per 100 signals of this type in the period (27.5 means 27.5 %); 0 when total is 0',
    ),
});

export const statisticsSchema = z
  .strictObject({
    total_signals: z.number().int().nonnegative(),
    winners: z.number().int().nonnegative(),
    win_rate: z
      .number()
      .describe(
        'Percent, 0–100 (not a fraction): winners per 100 signals of the period (27.5 means 27.5 %); 0 with no signals',
      ),
    avg_roi: z.number().describe('Mean ROI in percent'),
    best_roi: z.number().describe('Highest ROI in percent; 0 with no signals'),
    by_type: z
      .strictObject({
        new: typeStats,
        '3d': typeStats,
        '7d': typeStats,
        '30d': typeStats,
        wallet: typeStats,
        premium: typeStats,
      } satisfies Record<SignalType, typeof typeStats>)
      .describe(
        'Every signal type, always, with its own figures for the period; a `type` filter narrows the top-level figures only, never these',
      ),
  })
  .meta({ id: 'Statistics' });
export type Statistics = z.infer<typeof statisticsSchema>;

export const statsResponseSchema = z
  .strictObject({ success: z.literal(true), data: statisticsSchema })
  .meta({ id: 'StatisticsResponse' });

export const statsQuerySchema = z.strictObject({
  type: z
    .enum(SIGNAL_TYPES, { error: `type must be one of ${SIGNAL_TYPES.join(', ')}` })
    .optional()
    .describe('Only signals of this type'),
  period: z
    .enum(STATS_PERIODS, { error: `period must be one of ${STATS_PERIODS.join(', ')}` })
    .optional()
    .describe('Time window on created_at; default all'),
});
export type StatsQuery = z.infer<typeof statsQuerySchema>;
