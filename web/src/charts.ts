/** Chart.js, bundled, with only the parts the dashboard draws. */
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Legend,
  LineController,
  LineElement,
  LinearScale,
  PointElement,
  Tooltip,
} from 'chart.js';
import type { UsageHistory } from './api.js';
import { count, usd } from './format.js';

Chart.register(
  BarController,
  BarElement,
  LineController,
  LineElement,
  PointElement,
  CategoryScale,
  LinearScale,
  Tooltip,
  Legend,
);

const SPEND = '#4f46e5';
const TOKENS = '#0d9488';

/** Daily spend (bars, USD) and tokens (line, second axis) over the last 30 days. */
export function dailyChart(canvas: HTMLCanvasElement, history: UsageHistory): Chart {
  return new Chart(canvas, {
    data: {
      labels: history.days.map((d) => d.day.slice(5)),
      datasets: [
        {
          type: 'bar',
          label: 'Spend (USD)',
          data: history.days.map((d) => d.credits),
          backgroundColor: SPEND,
          yAxisID: 'spend',
        },
        {
          type: 'line',
          label: 'Tokens',
          data: history.days.map((d) => d.prompt_tokens + d.completion_tokens),
          borderColor: TOKENS,
          backgroundColor: TOKENS,
          pointRadius: 2,
          yAxisID: 'tokens',
        },
      ],
    },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      interaction: { mode: 'index', intersect: false },
      scales: {
        spend: { type: 'linear', position: 'left', beginAtZero: true, ticks: { callback: (v) => usd(Number(v)) } },
        tokens: {
          type: 'linear',
          position: 'right',
          beginAtZero: true,
          grid: { drawOnChartArea: false },
          ticks: { callback: (v) => count(Number(v)) },
        },
      },
      plugins: {
        tooltip: {
          callbacks: {
            label: (item) =>
              item.dataset.yAxisID === 'spend'
                ? `Spend: ${usd(Number(item.raw))}`
                : `Tokens: ${count(Number(item.raw))}`,
          },
        },
      },
    },
  });
}

/** Spend per model over the same 30 days. */
export function modelChart(canvas: HTMLCanvasElement, history: UsageHistory): Chart {
  return new Chart(canvas, {
    type: 'bar',
    data: {
      labels: history.models.map((m) => m.model),
      datasets: [{ label: 'Spend (USD)', data: history.models.map((m) => m.credits), backgroundColor: SPEND }],
    },
    options: {
      indexAxis: 'y',
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      plugins: { legend: { display: false }, tooltip: { callbacks: { label: (item) => usd(Number(item.raw)) } } },
      scales: { x: { beginAtZero: true, ticks: { callback: (v) => usd(Number(v)) } } },
    },
  });
}
