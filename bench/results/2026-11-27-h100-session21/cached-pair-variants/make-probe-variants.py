import sys
v=sys.argv[1]
H='core/src/host_allocator/allocator_impl.hpp'; C='core/src/host_allocator/caching_host_allocator.cpp'
def rep(p,a,b):
    s=open(p).read(); assert a in s,(p,a); open(p,'w').write(s.replace(a,b))
if v=='nostats':
    rep(H,"""    bump(slot.hits, 1);
    bump(tc.requested_bytes, size);
""","")
    rep(C,"""    bump(tc->slots[b->cls].freed, 1);""","")
if v=='nolock':
    rep(H,"""    if (!tc.lock.owner_try_lock()) return nullptr;
    auto& slot = tc.slots[cls];  // a class above ThreadCache::kMaxBlock: always empty
    Block* b = slot.pop_credited();
    tc.lock.owner_unlock();""","""    auto& slot = tc.slots[cls];
    Block* b = slot.pop_credited();""")
    rep(H,"""|| !tc.lock.owner_try_lock()) return false;""",""") return false;""")
    rep(H,"""    tc.lock.owner_unlock();
    return kept;""","""    return kept;""")
if v=='nohandout':
    rep(H,"""    b->captured = captured;
    b->streams_outlive = true;
    b->requested.store(size, std::memory_order_relaxed);""","    (void)captured;")
if v=='nochecks':
    rep(H,"""    if (b->pool != PoolId{} || b->size > ThreadCache::kMaxBlock || !tc.lock.owner_try_lock()) return false;""","""    if (!tc.lock.owner_try_lock()) return false;""")
