package skill

// family is one resource type of a domain: the built-in generator gives it
// a ladder of twelve tools from L0 to L4 and four skills over them.
type family struct {
	id, noun, plural string // id: identifier form of the noun; plural also names tools
	idPrefix         string
	exec, execPast   string // the L3 action on one item
	del              string // the L3 removal of one item
	fields           [][2]string
	terms            []string
	tags             []string
}

// domainSpec is one built-in library's vocabulary.
type domainSpec struct {
	name, domain, description string
	container                 string // what holds every item: "mailbox"
	families                  []family
}

var builtinSpecs = []domainSpec{
	{
		name: "email", domain: "email", container: "mailbox",
		description: "An e-mail workspace: drafts, received messages, calendar events, contacts and mail filters.",
		families: []family{
			{id: "draft", noun: "draft", plural: "drafts", idPrefix: "D-", exec: "send", execPast: "sent", del: "discard",
				fields: [][2]string{{"subject", "Quarterly numbers"}, {"subject", "Follow-up on Tuesday"}, {"priority", "high"}, {"priority", "low"}},
				terms:  []string{"invoice", "offsite", "renewal", "hiring", "board pack", "visa letter"}, tags: []string{"finance", "travel", "urgent", "later"}},
			{id: "message", noun: "message", plural: "messages", idPrefix: "M-", exec: "report", execPast: "reported", del: "delete",
				fields: [][2]string{{"folder", "Archive"}, {"folder", "Receipts"}, {"importance", "high"}, {"importance", "normal"}},
				terms:  []string{"password reset", "delivery notice", "contract", "newsletter", "payslip", "conference"}, tags: []string{"receipts", "legal", "read-later", "vendors"}},
			{id: "event", noun: "event", plural: "events", idPrefix: "E-", exec: "confirm", execPast: "confirmed", del: "remove",
				fields: [][2]string{{"location", "Room 4B"}, {"location", "Video call"}, {"title", "Design review"}, {"title", "1:1 with Priya"}},
				terms:  []string{"standup", "dentist", "design review", "all-hands", "interview", "planning"}, tags: []string{"team", "personal", "recurring", "travel"}},
			{id: "contact", noun: "contact", plural: "contacts", idPrefix: "C-", exec: "share", execPast: "shared", del: "remove",
				fields: [][2]string{{"company", "Northwind"}, {"company", "Fabrikam"}, {"phone", "+44 20 7946 0958"}, {"title", "Head of Sales"}},
				terms:  []string{"Northwind", "recruiter", "accountant", "landlord", "supplier", "school"}, tags: []string{"clients", "family", "vip", "vendors"}},
			{id: "filter", noun: "filter", plural: "filters", idPrefix: "F-", exec: "apply", execPast: "applied", del: "delete",
				fields: [][2]string{{"label", "Newsletters"}, {"label", "Billing"}, {"match", "from:billing@"}, {"match", "subject:digest"}},
				terms:  []string{"newsletters", "billing", "social", "alerts", "digest", "promotions"}, tags: []string{"cleanup", "work", "experimental", "old"}},
		},
	},
	{
		name: "ecommerce", domain: "commerce", container: "store",
		description: "An online store back office: orders, refunds, product listings, coupons and reviews.",
		families: []family{
			{id: "order", noun: "order", plural: "orders", idPrefix: "O-", exec: "ship", execPast: "shipped", del: "cancel",
				fields: [][2]string{{"carrier", "DHL"}, {"carrier", "UPS"}, {"shipping_address", "12 Harbour Road, Leith"}, {"note", "Leave with the neighbour"}},
				terms:  []string{"gift wrap", "express", "backorder", "wholesale", "international", "pre-order"}, tags: []string{"fragile", "priority", "gift", "review"}},
			{id: "refund", noun: "refund", plural: "refunds", idPrefix: "R-", exec: "approve", execPast: "approved", del: "void",
				fields: [][2]string{{"amount", "19.99"}, {"amount", "45.00"}, {"reason", "damaged in transit"}, {"reason", "wrong size"}},
				terms:  []string{"damaged", "late delivery", "wrong size", "duplicate charge", "missing item", "chargeback"}, tags: []string{"escalated", "fraud-check", "vip", "done"}},
			{id: "product", noun: "product", plural: "products", idPrefix: "P-", exec: "publish", execPast: "published", del: "delist",
				fields: [][2]string{{"price", "24.50"}, {"price", "9.99"}, {"title", "Linen apron"}, {"stock", "40"}},
				terms:  []string{"linen", "ceramic", "winter sale", "bundle", "refurbished", "handmade"}, tags: []string{"seasonal", "bestseller", "clearance", "new"}},
			{id: "coupon", noun: "coupon", plural: "coupons", idPrefix: "K-", exec: "activate", execPast: "activated", del: "revoke",
				fields: [][2]string{{"discount", "15%"}, {"discount", "5 EUR"}, {"expires", "2026-12-31"}, {"expires", "2027-01-15"}},
				terms:  []string{"black friday", "welcome", "loyalty", "newsletter", "spring", "influencer"}, tags: []string{"marketing", "partners", "test", "expired"}},
			{id: "review", noun: "review", plural: "reviews", idPrefix: "V-", exec: "feature", execPast: "featured", del: "hide",
				fields: [][2]string{{"response", "Thanks for the kind words!"}, {"response", "Sorry to hear that, we have sent a replacement."}, {"status", "answered"}, {"status", "pending"}},
				terms:  []string{"sizing", "delivery", "quality", "packaging", "customer service", "colour"}, tags: []string{"positive", "negative", "needs-reply", "spam"}},
		},
	},
	{
		name: "filesystem", domain: "filesystem", container: "workspace",
		description: "A shared file workspace: files, scripts, backups, folders and logs.",
		families: []family{
			{id: "file", noun: "file", plural: "files", idPrefix: "FL-", exec: "share", execPast: "shared", del: "delete",
				fields: [][2]string{{"name", "budget-2026.xlsx"}, {"name", "notes-final.md"}, {"owner", "priya"}, {"owner", "tomas"}},
				terms:  []string{"budget", "slides", "contract", "roadmap", "minutes", "draft"}, tags: []string{"confidential", "shared", "archive", "todo"}},
			{id: "script", noun: "script", plural: "scripts", idPrefix: "S-", exec: "run", execPast: "run", del: "remove",
				fields: [][2]string{{"schedule", "daily 02:00"}, {"schedule", "weekly Monday"}, {"interpreter", "python3"}, {"interpreter", "bash"}},
				terms:  []string{"cleanup", "report", "resize", "import", "lint", "migrate"}, tags: []string{"ops", "deprecated", "nightly", "manual"}},
			{id: "backup", noun: "backup", plural: "backups", idPrefix: "B-", exec: "restore", execPast: "restored", del: "delete",
				fields: [][2]string{{"retention", "30 days"}, {"retention", "1 year"}, {"label", "before-migration"}, {"label", "month-end"}},
				terms:  []string{"photos", "database", "home folder", "mail archive", "month-end", "laptop"}, tags: []string{"verified", "offsite", "keep", "old"}},
			{id: "folder", noun: "folder", plural: "folders", idPrefix: "DIR-", exec: "sync", execPast: "synced", del: "delete",
				fields: [][2]string{{"name", "Projects 2026"}, {"name", "Scans"}, {"color", "blue"}, {"color", "green"}},
				terms:  []string{"projects", "scans", "invoices", "photos", "exports", "shared"}, tags: []string{"team", "personal", "cold", "hot"}},
			{id: "log", noun: "log", plural: "logs", idPrefix: "LG-", exec: "rotate", execPast: "rotated", del: "truncate",
				fields: [][2]string{{"level", "warning"}, {"level", "debug"}, {"retention", "14 days"}, {"retention", "90 days"}},
				terms:  []string{"nginx", "auth", "cron", "backup job", "printer", "sync agent"}, tags: []string{"noisy", "audit", "incident", "ignore"}},
		},
	},
	{
		name: "finance", domain: "finance", container: "ledger",
		description: "A small-business finance desk: payments, invoices, transfers, cards and tax reports.",
		families: []family{
			{id: "payment", noun: "payment", plural: "payments", idPrefix: "PM-", exec: "execute", execPast: "executed", del: "cancel",
				fields: [][2]string{{"reference", "INV-2291"}, {"reference", "RENT-DEC"}, {"due_date", "2026-12-15"}, {"due_date", "2027-01-05"}},
				terms:  []string{"rent", "payroll", "utilities", "supplier", "insurance", "software"}, tags: []string{"recurring", "approved", "on-hold", "disputed"}},
			{id: "invoice", noun: "invoice", plural: "invoices", idPrefix: "IN-", exec: "approve", execPast: "approved", del: "void",
				fields: [][2]string{{"amount", "1200.00"}, {"amount", "86.40"}, {"cost_centre", "Marketing"}, {"cost_centre", "R&D"}},
				terms:  []string{"consulting", "hosting", "catering", "travel", "licences", "hardware"}, tags: []string{"paid", "overdue", "capex", "query"}},
			{id: "transfer", noun: "transfer", plural: "transfers", idPrefix: "TR-", exec: "release", execPast: "released", del: "cancel",
				fields: [][2]string{{"memo", "Q4 top-up"}, {"memo", "Petty cash"}, {"value_date", "2026-12-20"}, {"value_date", "2027-01-02"}},
				terms:  []string{"savings", "payroll account", "tax reserve", "petty cash", "subsidiary", "escrow"}, tags: []string{"internal", "urgent", "scheduled", "review"}},
			{id: "card", noun: "card", plural: "cards", idPrefix: "CD-", exec: "freeze", execPast: "frozen", del: "close",
				fields: [][2]string{{"monthly_limit", "2000"}, {"monthly_limit", "500"}, {"holder", "Marta Ruiz"}, {"holder", "Ken Ito"}},
				terms:  []string{"travel", "marketing", "contractor", "virtual", "fuel", "subscriptions"}, tags: []string{"team", "lost", "temporary", "executive"}},
			{id: "report", noun: "tax report", plural: "tax reports", idPrefix: "TX-", exec: "submit", execPast: "submitted", del: "withdraw",
				fields: [][2]string{{"period", "2026-Q3"}, {"period", "2026-Q4"}, {"preparer", "Ana Costa"}, {"preparer", "Li Wei"}},
				terms:  []string{"VAT", "payroll tax", "annual return", "withholding", "customs", "amended"}, tags: []string{"draft", "filed", "needs-review", "late"}},
		},
	},
}
