package supply_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/persistence/pgtest"
	"github.com/switchboard/switchboard/supply/quality"
)

func qualityServer(t *testing.T, dbURL string, set func(q *quality.Config)) *apptest.Server {
	t.Helper()
	return apptest.Start(t, apptest.Options{DatabaseURL: dbURL, Configure: func(c *app.Config) {
		if set != nil {
			set(&c.Quality)
		}
	}})
}

func (p *partner) offersFrom(t *testing.T, user, device, ip string) offers {
	t.Helper()
	r := p.campaignsRaw(t, user, device, "user_ip="+ip+"&device_type=2").Expect(t, 200)
	var o offers
	r.Decode(t, &o)
	return o
}

func expectBlocked(t *testing.T, o offers, comment string) {
	t.Helper()
	if len(o.Surveys) != 0 || o.Eligibility.IsEligible || o.Eligibility.Reason != 1 ||
		!strings.Contains(o.Eligibility.Comment, comment) {
		t.Fatalf("want blocked (%s): %+v", comment, o)
	}
	for _, digit := range "0123456789" {
		if strings.ContainsRune(o.Eligibility.Comment, digit) {
			t.Fatalf("comment %q reveals a threshold", o.Eligibility.Comment)
		}
	}
}

func TestQualityUserIP(t *testing.T) {
	t.Parallel()
	s := qualityServer(t, "", nil)
	p := newPartner(t, s)
	u := newUser()
	p.impanel(t, u, 1, usProfile(30, 1, "94105")...)
	for _, ip := range []string{"10.1.2.3", "172.16.0.1", "192.168.1.1", "127.0.0.1", "169.254.1.1", "224.0.0.1",
		"0.0.0.0", "255.255.255.255", "240.0.0.1", "100.64.0.1", "203.0.113.5", "::", "::1", "fe80::1", "fc00::1",
		"ff02::1", "2001:db8::1", "::ffff:10.0.0.1"} {
		expectError(t, p.campaignsRaw(t, u, "", "user_ip="+ip+"&device_type=1"), 400, "user_ip")
	}
	for _, ip := range []string{"73.15.20.9", "8.8.8.8", "2a00:1450:4001:80b::200e", "::ffff:8.8.8.8"} {
		p.campaignsRaw(t, u, "", "user_ip="+ip+"&device_type=1").Expect(t, 200)
	}

	// Allowed for testing: private ranges pass, reserved ones still do not.
	s2 := qualityServer(t, "", func(q *quality.Config) { q.AllowPrivateIPs = true })
	p2 := newPartner(t, s2)
	p2.impanel(t, u, 1, usProfile(30, 1, "94105")...)
	for _, ip := range []string{"10.1.2.3", "127.0.0.1", "192.168.0.7", "fd00::1", "203.0.113.5"} {
		p2.campaignsRaw(t, u, "", "user_ip="+ip+"&device_type=1").Expect(t, 200)
	}
	for _, ip := range []string{"0.0.0.0", "224.0.0.1", "255.255.255.255", "::"} {
		expectError(t, p2.campaignsRaw(t, u, "", "user_ip="+ip+"&device_type=1"), 400, "user_ip")
	}
}

// writeCountryDB builds a small MaxMind-format country database.
func writeCountryDB(t *testing.T, nets map[string]string) string {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "GeoIP2-Country", RecordSize: 24})
	if err != nil {
		t.Fatal(err)
	}
	for cidr, iso := range nets {
		_, n, err := net.ParseCIDR(cidr)
		if err != nil {
			t.Fatal(err)
		}
		if err := tree.Insert(n, mmdbtype.Map{"country": mmdbtype.Map{"iso_code": mmdbtype.String(iso)}}); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "country.mmdb")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tree.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func readyz(t *testing.T, s *apptest.Server) map[string]any {
	t.Helper()
	return get(t, s, s.URL+"/readyz").Expect(t, 200).Object(t)
}

func TestQualityGeoIP(t *testing.T) {
	t.Parallel()
	db := writeCountryDB(t, map[string]string{"73.0.0.0/8": "US", "81.2.69.0/24": "GB", "2a02:8000::/24": "GB"})
	s := qualityServer(t, "", func(q *quality.Config) { q.GeoIPDB = db })
	if r := readyz(t, s); r["geoip"] != "ok" {
		t.Fatalf("readyz with a database: %v", r)
	}
	m := newMarket(t, s)
	c := m.create(campaignSpec{})
	waitEngine(t, s, c, true)
	p := newPartner(t, s)
	u := newUser()
	p.impanel(t, u, 1, usProfile(30, 1, "94105")...) // US

	if o := p.offersFrom(t, u, "", "73.15.20.9"); !o.has(c) || o.Eligibility.Reason != 0 {
		t.Fatalf("US participant on a US IP: %+v", o)
	}
	for _, ip := range []string{"81.2.69.160", "2a02:8000::1"} {
		o := p.offersFrom(t, u, "", ip)
		if len(o.Surveys) != 0 || o.Eligibility.IsEligible || o.Eligibility.Reason != 3 {
			t.Fatalf("US participant on GB IP %s: %+v", ip, o)
		}
	}
	// An IP the database does not know is not held against the participant.
	if o := p.offersFrom(t, u, "", "1.2.3.4"); !o.has(c) {
		t.Fatalf("unknown IP: %+v", o)
	}
	// A GB participant on a GB IP is served (no GB campaigns: reason 2, not 3).
	g := newUser()
	p.impanel(t, g, 2, answer(42, 40), answer(43, 2), answer(45, "SW1A 1AA"))
	if o := p.offersFrom(t, g, "", "81.2.69.160"); o.Eligibility.Reason == 3 {
		t.Fatalf("GB participant on a GB IP: %+v", o)
	}
	if o := p.offersFrom(t, g, "", "73.1.1.1"); o.Eligibility.Reason != 3 {
		t.Fatalf("GB participant on a US IP: %+v", o)
	}
	metrics := string(get(t, s, s.URL+"/metrics").Expect(t, 200).Body)
	want := `switchboard_quality_ip_mismatches_total{publisher="` + itoa(p.ID) + `"} 3`
	if !strings.Contains(metrics, want) {
		t.Fatalf("metrics lack %q:\n%s", want, grepLines(metrics, "quality"))
	}

	// Without a database the check is off and /readyz says so.
	off := qualityServer(t, "", nil)
	if r := readyz(t, off); r["geoip"] != "off" {
		t.Fatalf("readyz without a database: %v", r)
	}
	m2 := newMarket(t, off)
	c2 := m2.create(campaignSpec{})
	waitEngine(t, off, c2, true)
	p2 := newPartner(t, off)
	p2.impanel(t, u, 1, usProfile(30, 1, "94105")...)
	if o := p2.offersFrom(t, u, "", "81.2.69.160"); !o.has(c2) {
		t.Fatalf("no database, GB IP: %+v", o)
	}
	// A missing file refuses to start.
	if _, err := app.New(context.Background(), app.Config{DatabaseURL: pgtest.URL(t),
		Quality: quality.Config{GeoIPDB: filepath.Join(t.TempDir(), "missing.mmdb")}}, zap.NewNop()); err == nil {
		t.Fatal("a missing geoip database was accepted")
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestQualityImplausibleProfile(t *testing.T) {
	t.Parallel()
	s := qualityServer(t, "", nil)
	m := newMarket(t, s)
	c := m.create(campaignSpec{})
	waitEngine(t, s, c, true)
	p := newPartner(t, s)

	// AGE may go up by one year; not backwards, not by two.
	for _, ages := range [][]int{{30, 28}, {30, 32}} {
		u := newUser()
		p.impanel(t, u, 1, usProfile(ages[0], 1, "94105")...)
		if o := p.offersFrom(t, u, "", "73.15.20.9"); !o.has(c) {
			t.Fatalf("before: %+v", o)
		}
		p.impanel(t, u, 1, answer(42, ages[1]))
		expectBlocked(t, p.offersFrom(t, u, "", "73.15.20.9"), "implausible profile")
	}
	ok := newUser()
	p.impanel(t, ok, 1, usProfile(30, 1, "94105")...)
	p.impanel(t, ok, 1, answer(42, 31))
	p.impanel(t, ok, 1, answer(43, 2)) // one GENDER correction is allowed
	if o := p.offersFrom(t, ok, "", "73.15.20.9"); !o.has(c) {
		t.Fatalf("plausible changes blocked: %+v", o)
	}
	p.impanel(t, ok, 1, answer(43, 1)) // the second flip is not
	expectBlocked(t, p.offersFrom(t, ok, "", "73.15.20.9"), "implausible profile")
}

func TestQualityDuplicates(t *testing.T) {
	t.Parallel()
	s := qualityServer(t, "", func(q *quality.Config) { q.FlushEvery = 50 * time.Millisecond })
	m := newMarket(t, s)
	c := m.create(campaignSpec{})
	waitEngine(t, s, c, true)
	p := newPartner(t, s)

	// One user impaneled in two countries within 24 hours.
	u := newUser()
	p.impanel(t, u, 1, usProfile(30, 1, "94105")...)
	p.impanel(t, u, 2, answer(42, 30), answer(43, 1), answer(45, "SW1A 1AA"))
	expectBlocked(t, p.offersFrom(t, u, "", "73.15.20.9"), "duplicate identity")

	// One device with four users of the publisher (more than 3): each of them is blocked;
	// three users on a device are fine.
	device := "DEV-" + newUser()
	users := []string{newUser(), newUser(), newUser(), newUser()}
	for _, x := range users[:3] {
		p.impanelRaw(t, x, device, p.impanelBody(x, 1, usProfile(30, 1, "94105"))).Expect(t, 200)
		p.offersFrom(t, x, device, "73.15.20.9")
	}
	time.Sleep(200 * time.Millisecond) // a few flushes
	for _, x := range users[:3] {
		if o := p.offersFrom(t, x, device, "73.15.20.9"); !o.has(c) {
			t.Fatalf("three users on a device: %+v", o)
		}
	}
	// The fourth user only asks for offers on the device (impaneled without it).
	p.impanel(t, users[3], 1, usProfile(44, 2, "94105")...)
	p.offersFrom(t, users[3], device, "73.15.20.9")
	for _, x := range users {
		eventually(t, "device duplicates blocked", func() bool {
			o := p.offersFrom(t, x, device, "73.15.20.9")
			return o.Eligibility.Reason == 1 && strings.Contains(o.Eligibility.Comment, "duplicate identity")
		})
	}
	metrics := string(get(t, s, s.URL+"/metrics").Expect(t, 200).Body)
	for _, want := range []string{
		`switchboard_quality_duplicates_total{publisher="` + itoa(p.ID) + `"} 5`,
		`switchboard_quality_blocked_participants{publisher="` + itoa(p.ID) + `"} 5`,
		`switchboard_quality_blocks_total{publisher="` + itoa(p.ID) + `"} 5`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q:\n%s", want, grepLines(metrics, "quality"))
		}
	}
}

// TestQualityBlockAcrossProcesses: a block decided on one server reaches another server on
// the same database within a second, and so does its lifting.
func TestQualityBlockAcrossProcesses(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.URL(t)
	s1 := qualityServer(t, dbURL, nil)
	s2 := qualityServer(t, dbURL, nil)
	m := newMarket(t, s1)
	c := m.create(campaignSpec{})
	waitEngine(t, s1, c, true)
	waitEngine(t, s2, c, true)
	p1 := newPartner(t, s1)
	p2 := p1.on(t, s2)
	u := newUser()
	p1.impanel(t, u, 1, usProfile(30, 1, "94105")...)
	eventually(t, "participant on the second server", func() bool { return p2.offersFrom(t, u, "", "73.15.20.9").has(c) })

	p1.impanel(t, u, 1, answer(42, 25)) // AGE backwards: blocked
	took := eventually(t, "block on the second server", func() bool {
		return p2.offersFrom(t, u, "", "73.15.20.9").Eligibility.Reason == 1
	})
	if took > time.Second {
		t.Fatalf("the block took %v to reach the second server", took)
	}
	t.Logf("block reached the second server in %v", took)

	lifted, err := s1.DB.Quality.UnblockParticipant(context.Background(), p1.ID, u, "test")
	if err != nil || len(lifted) != 1 {
		t.Fatalf("unblock: %v %v", lifted, err)
	}
	took = eventually(t, "unblock on both servers", func() bool {
		return p2.offersFrom(t, u, "", "73.15.20.9").has(c) && p1.offersFrom(t, u, "", "73.15.20.9").has(c)
	})
	if took > time.Second {
		t.Fatalf("the unblock took %v", took)
	}
	// A server started afterwards loads the blocks at start.
	p1.impanel(t, u, 1, answer(42, 20))
	eventually(t, "blocked again", func() bool { return p1.offersFrom(t, u, "", "73.15.20.9").Eligibility.Reason == 1 })
	s3 := qualityServer(t, dbURL, nil)
	expectBlocked(t, p1.on(t, s3).offersFrom(t, u, "", "73.15.20.9"), "implausible profile")
}
