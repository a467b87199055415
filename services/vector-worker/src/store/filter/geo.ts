/**
 * `geo_radius` (haversine, mean Earth radius 6371008.8 m, `distance < radius`) and
 * `geo_bounding_box` (strict inequalities, antimeridian crossing when top_left.lon >
 * bottom_right.lon) and `geo_polygon` (planar even-odd test on lon/lat like geo's
 * `Polygon::contains`, holes from `interiors`; rings need ≥4 points and must be closed, else 400;
 * a point exactly on an edge may differ from Qdrant, which excludes the boundary) on
 * `{lon, lat}` objects.
 */
import type { Compiler, Fragment, Scope } from './filter-sql.ts';
import type { PathItem } from './key-path.ts';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const EARTH_RADIUS_M = 6371008.8;

function geoPoint(c: Compiler, v: unknown, path: string): { lon: number; lat: number } {
  if (!isObj(v) || typeof v.lon !== 'number' || typeof v.lat !== 'number') {
    throw c.bad(path, 'invalid type: expected a geo point {"lon": number, "lat": number}');
  }
  if (v.lon < -180 || v.lon > 180 || v.lat < -90 || v.lat > 90) {
    throw c.bad(path, `Wrong format of GeoPoint payload: expected \`lat\` = ${v.lat} within [-90;90] and \`lon\` = ${v.lon} within [-180;180]`);
  }
  return { lon: v.lon, lat: v.lat };
}

/** Guarded lon/lat of a stored element: only `{lon: number, lat: number}` objects qualify. */
function onGeo(c: Compiler, e: Fragment, pred: (lon: Fragment, lat: Fragment) => Fragment): Fragment {
  const sql = c.sql;
  return sql`(case when jsonb_typeof(${e}) = 'object' and jsonb_typeof(${e} -> 'lon') = 'number' and jsonb_typeof(${e} -> 'lat') = 'number'
    then ${pred(sql`((${e} ->> 'lon')::float8)`, sql`((${e} ->> 'lat')::float8)`)} else false end)`;
}

export function geoRadius(c: Compiler, g: unknown, path: string, items: readonly PathItem[], scope: Scope): Fragment {
  const sql = c.sql;
  if (!isObj(g)) throw c.bad(path, 'invalid type: expected an object');
  const center = geoPoint(c, g.center, `${path}.center`);
  const r = g.radius;
  if (typeof r !== 'number' || !Number.isFinite(r)) throw c.bad(`${path}.radius`, 'invalid type: expected a number');
  return c.anyElement(scope, items, (e) =>
    onGeo(c, e, (lon, lat) => {
      const lat1 = sql`radians(${center.lat}::float8)`;
      const lat2 = sql`radians(${lat})`;
      const a = sql`(power(sin((${lat2} - ${lat1}) / 2), 2) + cos(${lat1}) * cos(${lat2}) * power(sin((radians(${lon}) - radians(${center.lon}::float8)) / 2), 2))`;
      return sql`(2 * ${EARTH_RADIUS_M}::float8 * asin(least(1::float8, sqrt(${a}))) < ${r}::float8)`;
    }),
  );
}

function ring(c: Compiler, v: unknown, path: string): { lons: number[]; lats: number[] } {
  if (!isObj(v) || !Array.isArray(v.points)) throw c.bad(path, 'invalid type: expected {"points": [geo points]}');
  const pts = v.points.map((p, i) => geoPoint(c, p, `${path}.points[${i}]`));
  if (pts.length <= 3) throw c.bad(path, `polygon invalid, the size must be at least 4, got ${pts.length}`);
  const a = pts[0]!;
  const b = pts[pts.length - 1]!;
  if (Math.abs(a.lat - b.lat) > Number.EPSILON || Math.abs(a.lon - b.lon) > Number.EPSILON) {
    throw c.bad(path, 'polygon invalid, the first and the last points should be the same to form a closed line');
  }
  return { lons: pts.map((p) => p.lon), lats: pts.map((p) => p.lat) };
}

/** Even-odd ray casting of (lon, lat) against a closed ring; the division only runs on a crossing edge. */
function inRing(c: Compiler, lon: Fragment, lat: Fragment, r: { lons: number[]; lats: number[] }): Fragment {
  const sql = c.sql;
  const lo = sql`${r.lons}::float8[]`;
  const la = sql`${r.lats}::float8[]`;
  return sql`((select count(*) from generate_series(1, ${r.lons.length - 1}::int) as g(i)
    where case when ((${la})[g.i] > ${lat}) <> ((${la})[g.i + 1] > ${lat})
      then ${lon} < ((${lo})[g.i + 1] - (${lo})[g.i]) * (${lat} - (${la})[g.i]) / ((${la})[g.i + 1] - (${la})[g.i]) + (${lo})[g.i]
      else false end) % 2 = 1)`;
}

export function geoPolygon(c: Compiler, g: unknown, path: string, items: readonly PathItem[], scope: Scope): Fragment {
  const sql = c.sql;
  if (!isObj(g)) throw c.bad(path, 'invalid type: expected an object');
  const exterior = ring(c, g.exterior, `${path}.exterior`);
  const holes = g.interiors === undefined || g.interiors === null ? [] : g.interiors;
  if (!Array.isArray(holes)) throw c.bad(`${path}.interiors`, 'invalid type: expected a sequence');
  const interiors = holes.map((h, i) => ring(c, h, `${path}.interiors[${i}]`));
  return c.anyElement(scope, items, (e) =>
    onGeo(c, e, (lon, lat) =>
      c.join([inRing(c, lon, lat, exterior), ...interiors.map((r) => sql`not ${inRing(c, lon, lat, r)}`)], 'and'),
    ),
  );
}

export function geoBox(c: Compiler, g: unknown, path: string, items: readonly PathItem[], scope: Scope): Fragment {
  const sql = c.sql;
  if (!isObj(g)) throw c.bad(path, 'invalid type: expected an object');
  const tl = geoPoint(c, g.top_left, `${path}.top_left`);
  const br = geoPoint(c, g.bottom_right, `${path}.bottom_right`);
  return c.anyElement(scope, items, (e) =>
    onGeo(c, e, (lon, lat) => {
      const lonOk =
        tl.lon > br.lon
          ? sql`(${lon} > ${tl.lon}::float8 or ${lon} < ${br.lon}::float8)`
          : sql`(${tl.lon}::float8 < ${lon} and ${lon} < ${br.lon}::float8)`;
      return sql`(${lonOk} and ${br.lat}::float8 < ${lat} and ${lat} < ${tl.lat}::float8)`;
    }),
  );
}
