package engine

// StatusActive is the only campaign status the engine matches (docs/rules.md §4).
const StatusActive = 2

// Standard question ids fixed by the reference data (docs/rules.md §3).
const (
	QuestionAge      int32 = 42 // integer ages, stored as Codes
	QuestionGender   int32 = 43 // pre_code 1 male, 2 female
	QuestionZip      int32 = 45 // postal code strings, stored as Texts
	QuestionHispanic int32 = 47 // US only
)

// Device bits, shared by Campaign.Devices and Participant.Device. Bit n stands
// for the campaign device code n of supported_devices (0 tablet, 1 mobile,
// 2 desktop).
const (
	DeviceTablet  uint8 = 1 << 0
	DeviceMobile  uint8 = 1 << 1
	DeviceDesktop uint8 = 1 << 2
)

// Retarget kinds, the retargeting_type values of campaign_retargets.
const (
	RetargetTransaction  uint8 = 0 // transaction id of an earlier session, resolved to a participant
	RetargetRespondent   uint8 = 1 // {RESPONDENT_ID} value, resolved to a participant
	RetargetDevice       uint8 = 2 // raw X-Device-Identifier
	RetargetHashedDevice uint8 = 3 // upper-case hex SHA-1 of the upper-cased device identifier
)

// ReentryNever is the Campaign.ReentryMinutes value of a null reentry_interval:
// a respondent never enters the campaign twice.
const ReentryNever = -1

// Campaign is the definition of one campaign as persistence hands it to the
// engine. Build and With keep pointers into the slices they are given, so a
// Campaign must not be modified after it has been handed in.
type Campaign struct {
	ID, BuyerID          int64
	CountryID            int32 // country (not country-language)
	Status               int   // only StatusActive campaigns are matchable
	CPICents             int64 // cpi in US cents
	LOI, Incidence       int   // minutes, percent
	Devices              uint8 // bitmask of Device* bits; 0 means all devices
	MaxDailyCompletes    int   // 0 means no cap
	ReentryMinutes       int   // ReentryNever, 0 unlimited, n minutes between entries
	Quotas               []Quota
	Related              []int64    // campaign_relationships partners, both directions merged
	Retargets            []Retarget // while any is unexpired the campaign admits only listed respondents
	ExcludedParticipants []int64    // campaign_exclusions resolved to participant ids
	// ExcludedSuppliers are the publishers whose participants the campaign never admits
	// (excluded_supplier_ids, docs/rules.md §5.5).
	ExcludedSuppliers []int64
	// DaysInField and FieldStart (unix seconds the campaign went into field)
	// let the balanced allocation pace the campaign; 0 means
	// DefaultDaysInField and unknown (no pacing). Eligibility ignores them.
	DaysInField int
	FieldStart  int64
}

// Quota is one campaign quota: a conjunction of conditions and a target.
// Global quotas cap the campaign; the others admit respondents.
type Quota struct {
	ID             int64
	NumRespondents int
	ClickBalanced  bool // counts entries instead of completes
	Global         bool
	Conditions     []Condition // all must match; none means everyone matches
}

// Condition is one qualification of a quota. It matches when the
// participant's answer to QuestionID shares a code with Codes (select
// questions and AGE) or its normalized text is one of Texts (ZIP and other
// text questions). Texts must be normalized with NormalizeText.
type Condition struct {
	QuestionID int32
	Codes      []int32
	Texts      []string
	packed     string // Texts packed (conditiontexts.go), Texts nil: a snapshot's copy, or PackTexts
}

// Retarget is one campaign_retargets record. Kinds RetargetTransaction and
// RetargetRespondent name a participant (ParticipantID, 0 when persistence
// could not resolve it); RetargetDevice and RetargetHashedDevice carry Value.
// A record counts while now < ExpiresAt (unix seconds).
type Retarget struct {
	Kind          uint8
	ParticipantID int64
	Value         string
	ExpiresAt     int64
}

// DevicesFromCodes turns supported_devices codes (0 tablet, 1 mobile,
// 2 desktop) into the Campaign.Devices bitmask; unknown codes are ignored and
// an empty list means all devices (0).
func DevicesFromCodes(codes []int) uint8 {
	var m uint8
	for _, c := range codes {
		if c >= 0 && c <= 2 {
			m |= 1 << uint(c)
		}
	}
	return m
}

// DeviceFromSupply turns a supply device_type (1 mobile, 2 desktop, 3 tablet)
// into the Participant.Device bit; it returns 0 for an unknown type.
func DeviceFromSupply(deviceType int) uint8 {
	switch deviceType {
	case 1:
		return DeviceMobile
	case 2:
		return DeviceDesktop
	case 3:
		return DeviceTablet
	}
	return 0
}
