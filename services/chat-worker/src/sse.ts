// Open WebUI's SSE serialisation lives in common (the proxy worker writes chunks in it too).
export { pyJson, sseData, SSE_DONE, sseError, utf8 } from '@gatehouse/common';
