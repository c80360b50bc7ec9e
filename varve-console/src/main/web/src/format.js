export function bytes(n) {
  if (n === null || n === undefined) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return (i === 0 ? v : v.toFixed(v < 10 ? 2 : 1)) + ' ' + units[i];
}

export function num(n) {
  if (n === null || n === undefined) return '–';
  return n.toLocaleString('en-US');
}

export function time(ms) {
  if (ms === null || ms === undefined || ms < 0) return '–';
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
}
