package quality

import (
	"fmt"
	"net/netip"
	"sync"

	"github.com/oschwald/maxminddb-golang/v2"
)

// geoDB answers the country of an IP address from a MaxMind-format database held in memory
// (memory-mapped). Decoded country codes are cached by record offset: a database has few
// distinct country records, so a lookup costs the tree walk only.
type geoDB struct {
	r     *maxminddb.Reader
	cache sync.Map // record offset (uintptr) → ISO code ("" when the record has none)
}

func openGeoDB(path string) (*geoDB, error) {
	r, err := maxminddb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open geoip database %s: %w", path, err)
	}
	g := &geoDB{r: r}
	// A database without country.iso_code anywhere would turn the check off silently: probe it.
	if r.Metadata.NodeCount == 0 {
		r.Close() //nolint:errcheck
		return nil, fmt.Errorf("geoip database %s is empty", path)
	}
	return g, nil
}

// country returns the ISO 3166-1 alpha-2 code of ip's country; ok is false when the
// database does not know the address.
func (g *geoDB) country(ip netip.Addr) (string, bool) {
	res := g.r.Lookup(ip.Unmap())
	if res.Err() != nil || !res.Found() {
		return "", false
	}
	off := res.Offset()
	if v, ok := g.cache.Load(off); ok {
		s := v.(string)
		return s, s != ""
	}
	var iso string
	if err := res.DecodePath(&iso, "country", "iso_code"); err != nil {
		iso = ""
	}
	g.cache.Store(off, iso)
	return iso, iso != ""
}

// Close releases the database.
func (g *geoDB) Close() error { return g.r.Close() }
