/**
 * A small labelled set for measuring an embedding, written for this package (not taken from a public
 * benchmark). Each pair is two ways of saying the same thing, in the shape a memory tool sees: `query`
 * is how someone asks, `memory` is how the fact was stored. The pairs were written to cover three
 * levels of word overlap on purpose, so a lexical embedding is not flattered:
 * - `high`: most content words shared;
 * - `some`: one or two content words (or word stems) shared;
 * - `none`: a paraphrase with no content word in common (synonyms only).
 *
 * Unrelated pairs are made by pairing each query with the memory of the next pair (i, i+1), so they
 * use the same sentences. `hardNegatives` are pairs that share many words but mean different things.
 */
export interface ParaphrasePair {
  query: string;
  memory: string;
  overlap: 'high' | 'some' | 'none';
}

export const PARAPHRASE_PAIRS: readonly ParaphrasePair[] = [
  { query: 'How do I reset my password?', memory: 'To reset your password, open Settings and choose Reset password.', overlap: 'high' },
  { query: 'Which port does the vector store listen on?', memory: 'The vector store listens on port 6333.', overlap: 'high' },
  { query: 'What is the staging database hostname?', memory: 'The staging database hostname is db-staging.internal.', overlap: 'high' },
  { query: "When is Maria's birthday?", memory: 'Maria has her birthday on the 14th of March.', overlap: 'high' },
  { query: 'Which editor theme does the user prefer?', memory: 'The user prefers a dark editor theme with large fonts.', overlap: 'high' },
  { query: 'How long are the backups kept?', memory: 'Nightly backups are kept for thirty days.', overlap: 'high' },
  { query: 'What coffee does Tom drink?', memory: 'Tom drinks his coffee black, no sugar.', overlap: 'high' },
  { query: 'Where are the deployment scripts stored?', memory: 'Deployment scripts are stored in the ops repository under scripts/deploy.', overlap: 'high' },
  { query: 'What license does the project use?', memory: 'The project is released under the MIT license.', overlap: 'high' },
  { query: 'Which time zone is the Berlin office in?', memory: 'The Berlin office works in the Central European time zone.', overlap: 'high' },
  { query: 'How do I run the unit tests?', memory: 'Unit tests run with pnpm test:unit from the repository root.', overlap: 'some' },
  { query: 'Who approves production releases?', memory: 'Every release to production needs sign-off from Priya.', overlap: 'some' },
  { query: 'What was decided about logging?', memory: 'Decision: all services log JSON lines to stderr.', overlap: 'some' },
  { query: 'Is the customer allergic to anything?', memory: 'Customer note: severe allergy to peanuts.', overlap: 'some' },
  { query: 'What is the budget for the offsite?', memory: 'The team offsite is budgeted at 12,000 euros.', overlap: 'some' },
  { query: 'Which GPU do the training servers have?', memory: 'Training machines are fitted with one GPU each, an L4.', overlap: 'some' },
  { query: 'How should commit messages be written?', memory: 'Write commit messages in the imperative mood, under 72 characters.', overlap: 'some' },
  { query: 'What languages does Ana speak?', memory: 'Ana is fluent in Portuguese and speaks some Japanese.', overlap: 'some' },
  { query: 'When does the certificate expire?', memory: 'The TLS certificate for the API expires on 2026-09-30.', overlap: 'some' },
  { query: 'Why did the outage happen last week?', memory: 'Last week’s outage was caused by a full disk on the queue host.', overlap: 'some' },
  { query: 'I forgot my login credentials', memory: 'Lost sign-in details can be recovered from the account page.', overlap: 'none' },
  { query: 'What does my boss like to eat?', memory: 'The manager loves spicy Thai food.', overlap: 'none' },
  { query: 'Is the car fixed yet?', memory: 'The vehicle repair was completed on Friday.', overlap: 'none' },
  { query: 'How big is the apartment?', memory: 'The flat measures 70 square metres.', overlap: 'none' },
  { query: 'Who looks after the dog while we travel?', memory: 'When we are away, the neighbour walks and feeds our puppy.', overlap: 'none' },
  { query: 'The app is very slow', memory: 'Users report poor performance and long load times.', overlap: 'none' },
  { query: 'Purchase more printer paper', memory: 'Buy additional sheets for the copier.', overlap: 'none' },
  { query: 'What is the kid afraid of?', memory: 'Our son is scared of thunderstorms.', overlap: 'none' },
  { query: 'Start of the holiday', memory: 'Vacation begins on the first of August.', overlap: 'none' },
  { query: 'Physician appointment', memory: 'Seeing the doctor on Tuesday at nine.', overlap: 'none' },
];

/** Share many words, mean different things: a lexical embedding is expected to score these high. */
export const HARD_NEGATIVES: readonly { a: string; b: string }[] = [
  { a: 'The dog bit the man.', b: 'The man bit the dog.' },
  { a: 'Reset the staging database password.', b: 'Never reset the production database password.' },
  { a: 'The backup server is in Berlin.', b: 'The Berlin office has no backup server.' },
  { a: 'Tom likes coffee but not tea.', b: 'Tom likes tea but not coffee.' },
  { a: 'Deploy scripts must not run on Fridays.', b: 'Fridays are for running the deploy scripts.' },
  { a: 'The meeting moved from Monday to Tuesday.', b: 'The meeting moved from Tuesday to Monday.' },
];
