import { ANSWER_FILE, fill, taskId, type TaskFamily } from "../family.js";
import { drawFor, madeUpName } from "../holdout.js";
import { Rng } from "../prng.js";
import { FACTS_FILE, SEARCH_PROGRAM } from "../programs/search.js";
import { LOOKUP_VERIFIER } from "../programs/verifiers.js";
import { VERIFIER_DIR, type OracleStep, type Split, type Task } from "../task.js";
import { InfraError } from "../../core/errors.js";

/**
 * Multi-hop lookup QA: each task ships a small generated knowledge base of fictional people, companies, cities and
 * countries (facts.txt) and a `./search` tool. Questions need 2–3 lookups through a bridge entity; reward is token F1
 * of answer.txt against the gold answer, and every search is a process signal (did it return a fact on the gold path).
 * Held out: entity names (made-up single words, each belonging to one split by hash) and phrasing templates (each
 * question type has train phrasings and a distinct test phrasing). Relation paths are shared between splits.
 */

export type Rel = "works" | "born" | "hq" | "founder" | "country";

export interface World {
  persons: string[];
  companies: string[];
  cities: string[];
  countries: string[];
  worksFor: Map<string, string>;
  bornIn: Map<string, string>;
  hq: Map<string, string>;
  founder: Map<string, string>;
  countryOf: Map<string, string>;
}

/** Fact sentence for (subject, relation, object) and the query an oracle uses to find it. */
export const FACT: Record<Rel, { text: (s: string, o: string) => string; query: (s: string) => string }> = {
  works: { text: (s, o) => `${s} works for ${o}.`, query: (s) => `${s} works for` },
  born: { text: (s, o) => `${s} was born in ${o}.`, query: (s) => `${s} born in` },
  hq: { text: (s, o) => `${s} is headquartered in ${o}.`, query: (s) => `${s} headquartered` },
  founder: { text: (s, o) => `${s} was founded by ${o}.`, query: (s) => `${s} founded by` },
  country: { text: (s, o) => `${s} is a city in ${o}.`, query: (s) => `${s} city in` },
};

export interface QuestionType {
  start: "person" | "company";
  path: Rel[];
  phrasings: Record<Split, Record<string, string>>;
}

export const QUESTIONS: Record<string, QuestionType> = {
  employer_city: {
    start: "person",
    path: ["works", "hq"],
    phrasings: {
      train: {
        "lookup.employer_city.1": "In which city is the company that {x} works for headquartered?",
        "lookup.employer_city.2": "{x} works for a company. In what city is that company headquartered?",
      },
      test: { "lookup.employer_city.3": "Where is the employer of {x} headquartered? Give the city." },
    },
  },
  birth_country: {
    start: "person",
    path: ["born", "country"],
    phrasings: {
      train: {
        "lookup.birth_country.1": "In which country was {x} born?",
        "lookup.birth_country.2": "{x} was born in a city. Which country is that city in?",
      },
      test: { "lookup.birth_country.3": "Name the country of the birthplace of {x}." },
    },
  },
  employer_founder: {
    start: "person",
    path: ["works", "founder"],
    phrasings: {
      train: {
        "lookup.employer_founder.1": "Who founded the company that {x} works for?",
        "lookup.employer_founder.2": "{x} works for a company. Who was it founded by?",
      },
      test: { "lookup.employer_founder.3": "Name the founder of the employer of {x}." },
    },
  },
  founder_birthplace: {
    start: "company",
    path: ["founder", "born"],
    phrasings: {
      train: {
        "lookup.founder_birthplace.1": "In which city was the founder of {x} born?",
        "lookup.founder_birthplace.2": "{x} was founded by someone. Where was that person born?",
      },
      test: { "lookup.founder_birthplace.3": "Name the birth city of the person who founded {x}." },
    },
  },
  employer_country: {
    start: "person",
    path: ["works", "hq", "country"],
    phrasings: {
      train: { "lookup.employer_country.1": "In which country is the headquarters of the company {x} works for?" },
      test: { "lookup.employer_country.2": "Which country hosts the head office of the employer of {x}?" },
    },
  },
};

const SUFFIX = " Use ./search and write only the answer to answer.txt.";

function buildWorld(rng: Rng, split: Split): World {
  const taken = new Set<string>();
  const names = (n: number): string[] => Array.from({ length: n }, () => drawFor(rng, split, "entity", taken, madeUpName));
  const persons = names(6);
  const companies = names(4);
  const cities = names(4);
  const countries = names(3);
  const w: World = { persons, companies, cities, countries, worksFor: new Map(), bornIn: new Map(), hq: new Map(), founder: new Map(), countryOf: new Map() };
  for (const p of persons) {
    w.worksFor.set(p, rng.pick(companies));
    w.bornIn.set(p, rng.pick(cities));
  }
  for (const c of companies) {
    w.hq.set(c, rng.pick(cities));
    w.founder.set(c, rng.pick(persons));
  }
  for (const y of cities) w.countryOf.set(y, rng.pick(countries));
  return w;
}

function relMap(w: World, rel: Rel): Map<string, string> {
  return { works: w.worksFor, born: w.bornIn, hq: w.hq, founder: w.founder, country: w.countryOf }[rel];
}

function allFacts(w: World): string[] {
  const out: string[] = [];
  for (const rel of ["works", "born", "hq", "founder", "country"] as Rel[]) for (const [s, o] of relMap(w, rel)) out.push(FACT[rel].text(s, o));
  return out;
}

/** Builds worlds until one has a start entity whose path never revisits an entity (no self-founded employer). */
export function worldWithPath(rng: Rng, split: Split, q: QuestionType): { w: World; start: string } {
  for (let attempt = 0; attempt < 100; attempt++) {
    const w = buildWorld(rng, split);
    for (const s of rng.shuffle(q.start === "person" ? w.persons : w.companies)) {
      const seen = new Set([s]);
      let cur = s;
      let ok = true;
      for (const rel of q.path) {
        cur = relMap(w, rel).get(cur)!;
        if (seen.has(cur)) ok = false;
        seen.add(cur);
      }
      if (ok) return { w, start: s };
    }
  }
  throw new InfraError("internal", "no world with a simple path found");
}

/** A question's answer chain through its world: the entities visited and the gold fact of each hop. */
export interface LookupChain {
  chain: string[];
  goldPath: string[];
  answer: string;
}

export function walkChain(w: World, start: string, q: QuestionType): LookupChain {
  const chain = [start];
  const goldPath: string[] = [];
  let cur = start;
  for (const rel of q.path) {
    const next = relMap(w, rel).get(cur)!;
    goldPath.push(FACT[rel].text(cur, next));
    chain.push(next);
    cur = next;
  }
  return { chain, goldPath, answer: cur };
}

/** What `lookup` and its rungs share: the search tool, the shuffled facts and the F1 verifier of the answer file. */
export function lookupTaskParts(rng: Rng, w: World, c: LookupChain): Pick<Task, "files" | "verifier"> & { entities: string[] } {
  return {
    files: {
      search: { content: SEARCH_PROGRAM, encoding: "utf8", executable: true },
      [FACTS_FILE]: `${rng.shuffle(allFacts(w)).join("\n")}\n`,
    },
    verifier: {
      files: { "verify.cjs": LOOKUP_VERIFIER, "expected.json": JSON.stringify({ answer: c.answer, answerFile: ANSWER_FILE, path: c.goldPath }) },
      command: ["node", `${VERIFIER_DIR}/verify.cjs`],
    },
    entities: [...w.persons, ...w.companies, ...w.cities, ...w.countries].sort(),
  };
}

function generate(split: Split, seed: number, index: number): Task {
  const rng = Rng.from("lookup", split, seed, index);
  const qtypeName = rng.pick(Object.keys(QUESTIONS).sort());
  const q = QUESTIONS[qtypeName]!;
  const { w, start } = worldWithPath(rng, split, q);
  const c = walkChain(w, start, q);
  const steps: OracleStep[] = q.path.map((rel, k) => ({ kind: "run", command: `./search "${FACT[rel].query(c.chain[k]!)}"`, expect: c.goldPath[k]! }));
  steps.push({ kind: "write", path: ANSWER_FILE, content: c.answer });
  const template = rng.pick(Object.keys(q.phrasings[split]).sort());
  const prompt = fill(q.phrasings[split][template]!, { x: start }) + SUFFIX;
  const { files, verifier, entities } = lookupTaskParts(rng, w, c);
  return {
    id: taskId("lookup", split, seed, index),
    family: "lookup",
    split,
    prompt,
    files,
    verifier,
    metadata: {
      hostTools: ["search"],
      template,
      question: qtypeName,
      difficulty: q.path.length,
      hops: q.path.length,
      answer: c.answer,
      answerFile: ANSWER_FILE,
      chain: c.chain,
      goldPath: c.goldPath,
      entities,
      oracle: { steps, answer: c.answer },
    },
  };
}

export const lookupFamily: TaskFamily = {
  name: "lookup",
  summary: "multi-hop lookup QA over a generated knowledge base via ./search; token-F1 reward, per-search process signals",
  templates: {
    train: Object.values(QUESTIONS).flatMap((q) => Object.keys(q.phrasings.train)),
    test: Object.values(QUESTIONS).flatMap((q) => Object.keys(q.phrasings.test)),
  },
  generate,
};
