// Svelte 5 strips TypeScript in <script lang="ts"> itself; no preprocessors needed.
export default {
  compilerOptions: { runes: true },
};
