import json,glob,statistics as st,sys,re,os
d=sys.argv[1]
def med(f):
    j=json.load(open(f)); r={}
    for b in j['benchmarks']:
        if b.get('aggregate_name')=='median': r[b['run_name']]=b.get('items_per_second') or b.get('real_time')
    return r
for kind in ['scal','bwd']:
  for m in sys.argv[2].split(','):
    rows=[]
    for f in sorted(glob.glob(f'{d}/{kind}-{m}-*.json')):
        try: r=med(f)
        except Exception as e: print(f,e); continue
        rows.append(r)
    if not rows: continue
    keys=sorted(rows[0])
    print(kind,m,len(rows))
    for k in keys:
        v=[r.get(k) for r in rows if r.get(k)]
        print(f'  {k:70s} med {st.median(v):.4g}  min {min(v):.4g} max {max(v):.4g}')
    if kind=='scal':
        rat=[r['BM_ChainForwardBackwardThreads/1000/real_time/threads:8']/r['BM_ChainForwardBackwardThreads/1000/real_time/threads:1'] for r in rows]
        print('  8v1 per run', ' '.join(f'{x:.2f}' for x in rat), 'median', round(st.median(rat),2))
