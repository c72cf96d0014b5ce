package pagekit

import (
	"sort"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"
)

// Strings are the interface texts of the pages in one language (question and answer texts
// come from the qualification catalog). Templates read them as {{.T.key}}.
type Strings map[string]string

// Languages the interface is written in; the catalog's country languages all use one.
var languages = map[string]Strings{
	"en": {
		"failure_title":      "Something went wrong",
		"failure_body":       "We could not save your answers. Please try again in a moment.",
		"too_many_title":     "Too many messages",
		"too_many_body":      "You have sent several messages already. Our support team will answer them.",
		"help":               "Need help?",
		"optional":           "optional",
		"choose_one":         "Choose one.",
		"choose_any":         "Choose all that apply.",
		"error_prefix":       "Error:",
		"error_summary":      "There is a problem",
		"profile_title":      "Tell us about yourself",
		"profile_intro":      "Answer these questions once so that we can offer you surveys that fit you.",
		"profile_submit":     "Save and continue",
		"country_title":      "Where do you live?",
		"country_intro":      "We offer surveys in these countries.",
		"country_submit":     "Continue",
		"country_change":     "Change country",
		"country_current":    "Country:",
		"err_required":       "Answer this question.",
		"err_choice":         "Choose one of the answers.",
		"err_age":            "Enter your age in whole years, from 0 to 120.",
		"err_text":           "Enter an answer of at most 255 characters.",
		"err_country":        "Choose the country where you live.",
		"prescreen_title":    "A few questions first",
		"prescreen_intro":    "This survey is looking for particular participants. Answer these questions to continue.",
		"prescreen_submit":   "Continue to the survey",
		"support_title":      "Help",
		"support_profile":    "You were asked to complete your profile, so that we can find surveys for you in %s.",
		"support_survey":     "You were offered surveys in %s.",
		"support_how":        "Tell us what went wrong and our support team will look into it. If you want an answer, leave your email address.",
		"support_campaign":   "Which survey is it about?",
		"support_none":       "Not about a particular survey",
		"support_entered":    "Survey %s, started %s",
		"support_message":    "What happened?",
		"support_msg_hint":   "For example: the survey stopped, or you did not get your reward. At most 2,000 characters.",
		"support_email":      "Email address",
		"support_email_hint": "Only used to answer you.",
		"support_submit":     "Send message",
		"err_message":        "Describe what happened, in at most 2,000 characters.",
		"err_email":          "Enter an email address like name@example.com, or leave it empty.",
		"err_campaign":       "Choose one of the surveys listed.",
		"support_done":       "Message sent",
		"support_done_body":  "Thank you. Your reference is %s. You can close this page and go back to the app.",
		"invalid_title":      "This link does not work",
		"invalid_body":       "The link is invalid or has expired. Go back to the app and open it again.",
		"expired_title":      "This form has expired",
		"expired_body":       "Go back, reload the page and try again.",
	},
	"es": {
		"failure_title":      "Algo salió mal",
		"failure_body":       "No pudimos guardar sus respuestas. Inténtelo de nuevo en un momento.",
		"too_many_title":     "Demasiados mensajes",
		"too_many_body":      "Ya ha enviado varios mensajes. Nuestro equipo de soporte los responderá.",
		"help":               "¿Necesita ayuda?",
		"optional":           "opcional",
		"choose_one":         "Elija una opción.",
		"choose_any":         "Elija todas las que correspondan.",
		"error_prefix":       "Error:",
		"error_summary":      "Hay un problema",
		"profile_title":      "Cuéntenos sobre usted",
		"profile_intro":      "Responda estas preguntas una sola vez para que podamos ofrecerle encuestas adecuadas para usted.",
		"profile_submit":     "Guardar y continuar",
		"country_title":      "¿Dónde vive?",
		"country_intro":      "Ofrecemos encuestas en estos países.",
		"country_submit":     "Continuar",
		"country_change":     "Cambiar de país",
		"country_current":    "País:",
		"err_required":       "Responda esta pregunta.",
		"err_choice":         "Elija una de las respuestas.",
		"err_age":            "Indique su edad en años cumplidos, de 0 a 120.",
		"err_text":           "Escriba una respuesta de 255 caracteres como máximo.",
		"err_country":        "Elija el país donde vive.",
		"prescreen_title":    "Primero, unas preguntas",
		"prescreen_intro":    "Esta encuesta busca participantes concretos. Responda estas preguntas para continuar.",
		"prescreen_submit":   "Continuar a la encuesta",
		"support_title":      "Ayuda",
		"support_profile":    "Se le pidió completar su perfil para que podamos encontrar encuestas para usted en %s.",
		"support_survey":     "Se le ofrecieron encuestas en %s.",
		"support_how":        "Cuéntenos qué salió mal y nuestro equipo de soporte lo revisará. Si desea una respuesta, deje su correo electrónico.",
		"support_campaign":   "¿Sobre qué encuesta es?",
		"support_none":       "No es sobre una encuesta concreta",
		"support_entered":    "Encuesta %s, iniciada %s",
		"support_message":    "¿Qué ocurrió?",
		"support_msg_hint":   "Por ejemplo: la encuesta se detuvo o no recibió su recompensa. 2000 caracteres como máximo.",
		"support_email":      "Correo electrónico",
		"support_email_hint": "Solo se usa para responderle.",
		"support_submit":     "Enviar mensaje",
		"err_message":        "Describa lo ocurrido en 2000 caracteres como máximo.",
		"err_email":          "Escriba un correo como nombre@ejemplo.com o deje el campo vacío.",
		"err_campaign":       "Elija una de las encuestas de la lista.",
		"support_done":       "Mensaje enviado",
		"support_done_body":  "Gracias. Su referencia es %s. Puede cerrar esta página y volver a la aplicación.",
		"invalid_title":      "Este enlace no funciona",
		"invalid_body":       "El enlace no es válido o ha caducado. Vuelva a la aplicación y ábralo de nuevo.",
		"expired_title":      "Este formulario ha caducado",
		"expired_body":       "Vuelva atrás, recargue la página e inténtelo de nuevo.",
	},
	"fr": {
		"failure_title":      "Une erreur s’est produite",
		"failure_body":       "Nous n’avons pas pu enregistrer vos réponses. Réessayez dans un instant.",
		"too_many_title":     "Trop de messages",
		"too_many_body":      "Vous avez déjà envoyé plusieurs messages. Notre équipe d’assistance y répondra.",
		"help":               "Besoin d’aide ?",
		"optional":           "facultatif",
		"choose_one":         "Choisissez une réponse.",
		"choose_any":         "Choisissez toutes les réponses qui s’appliquent.",
		"error_prefix":       "Erreur :",
		"error_summary":      "Il y a un problème",
		"profile_title":      "Parlez-nous de vous",
		"profile_intro":      "Répondez une seule fois à ces questions pour que nous puissions vous proposer des enquêtes qui vous correspondent.",
		"profile_submit":     "Enregistrer et continuer",
		"country_title":      "Où habitez-vous ?",
		"country_intro":      "Nous proposons des enquêtes dans ces pays.",
		"country_submit":     "Continuer",
		"country_change":     "Changer de pays",
		"country_current":    "Pays :",
		"err_required":       "Répondez à cette question.",
		"err_choice":         "Choisissez l’une des réponses.",
		"err_age":            "Indiquez votre âge en années révolues, de 0 à 120.",
		"err_text":           "Saisissez une réponse de 255 caractères au plus.",
		"err_country":        "Choisissez le pays où vous habitez.",
		"prescreen_title":    "Quelques questions d’abord",
		"prescreen_intro":    "Cette enquête recherche des participants précis. Répondez à ces questions pour continuer.",
		"prescreen_submit":   "Continuer vers l’enquête",
		"support_title":      "Aide",
		"support_profile":    "Il vous a été demandé de compléter votre profil afin que nous trouvions des enquêtes pour vous dans %s.",
		"support_survey":     "Des enquêtes vous ont été proposées dans %s.",
		"support_how":        "Dites-nous ce qui n’a pas fonctionné et notre équipe d’assistance s’en occupera. Pour recevoir une réponse, indiquez votre adresse e-mail.",
		"support_campaign":   "De quelle enquête s’agit-il ?",
		"support_none":       "Pas d’une enquête en particulier",
		"support_entered":    "Enquête %s, commencée %s",
		"support_message":    "Que s’est-il passé ?",
		"support_msg_hint":   "Par exemple : l’enquête s’est arrêtée, ou vous n’avez pas reçu votre récompense. 2 000 caractères au plus.",
		"support_email":      "Adresse e-mail",
		"support_email_hint": "Utilisée uniquement pour vous répondre.",
		"support_submit":     "Envoyer le message",
		"err_message":        "Décrivez ce qui s’est passé, en 2 000 caractères au plus.",
		"err_email":          "Saisissez une adresse comme nom@exemple.com, ou laissez le champ vide.",
		"err_campaign":       "Choisissez l’une des enquêtes de la liste.",
		"support_done":       "Message envoyé",
		"support_done_body":  "Merci. Votre référence est %s. Vous pouvez fermer cette page et revenir à l’application.",
		"invalid_title":      "Ce lien ne fonctionne pas",
		"invalid_body":       "Le lien n’est pas valide ou a expiré. Revenez à l’application et ouvrez-le à nouveau.",
		"expired_title":      "Ce formulaire a expiré",
		"expired_body":       "Revenez en arrière, rechargez la page et réessayez.",
	},
	"de": {
		"failure_title":      "Etwas ist schiefgelaufen",
		"failure_body":       "Wir konnten Ihre Antworten nicht speichern. Bitte versuchen Sie es gleich noch einmal.",
		"too_many_title":     "Zu viele Nachrichten",
		"too_many_body":      "Sie haben bereits mehrere Nachrichten gesendet. Unser Support-Team wird sie beantworten.",
		"help":               "Brauchen Sie Hilfe?",
		"optional":           "optional",
		"choose_one":         "Wählen Sie eine Antwort.",
		"choose_any":         "Wählen Sie alle zutreffenden Antworten.",
		"error_prefix":       "Fehler:",
		"error_summary":      "Es gibt ein Problem",
		"profile_title":      "Erzählen Sie uns von sich",
		"profile_intro":      "Beantworten Sie diese Fragen einmal, damit wir Ihnen passende Umfragen anbieten können.",
		"profile_submit":     "Speichern und weiter",
		"country_title":      "Wo wohnen Sie?",
		"country_intro":      "Wir bieten Umfragen in diesen Ländern an.",
		"country_submit":     "Weiter",
		"country_change":     "Land ändern",
		"country_current":    "Land:",
		"err_required":       "Beantworten Sie diese Frage.",
		"err_choice":         "Wählen Sie eine der Antworten.",
		"err_age":            "Geben Sie Ihr Alter in vollen Jahren an, von 0 bis 120.",
		"err_text":           "Geben Sie eine Antwort mit höchstens 255 Zeichen ein.",
		"err_country":        "Wählen Sie das Land, in dem Sie wohnen.",
		"prescreen_title":    "Zuerst ein paar Fragen",
		"prescreen_intro":    "Diese Umfrage sucht bestimmte Teilnehmende. Beantworten Sie diese Fragen, um fortzufahren.",
		"prescreen_submit":   "Weiter zur Umfrage",
		"support_title":      "Hilfe",
		"support_profile":    "Sie wurden gebeten, Ihr Profil auszufüllen, damit wir in %s Umfragen für Sie finden.",
		"support_survey":     "Ihnen wurden in %s Umfragen angeboten.",
		"support_how":        "Schreiben Sie uns, was nicht funktioniert hat; unser Support-Team kümmert sich darum. Wenn Sie eine Antwort möchten, geben Sie Ihre E-Mail-Adresse an.",
		"support_campaign":   "Um welche Umfrage geht es?",
		"support_none":       "Um keine bestimmte Umfrage",
		"support_entered":    "Umfrage %s, begonnen %s",
		"support_message":    "Was ist passiert?",
		"support_msg_hint":   "Zum Beispiel: Die Umfrage brach ab, oder Sie haben Ihre Belohnung nicht erhalten. Höchstens 2.000 Zeichen.",
		"support_email":      "E-Mail-Adresse",
		"support_email_hint": "Wird nur für die Antwort verwendet.",
		"support_submit":     "Nachricht senden",
		"err_message":        "Beschreiben Sie, was passiert ist, in höchstens 2.000 Zeichen.",
		"err_email":          "Geben Sie eine Adresse wie name@beispiel.de ein oder lassen Sie das Feld leer.",
		"err_campaign":       "Wählen Sie eine der aufgeführten Umfragen.",
		"support_done":       "Nachricht gesendet",
		"support_done_body":  "Vielen Dank. Ihre Referenz ist %s. Sie können diese Seite schließen und zur App zurückkehren.",
		"invalid_title":      "Dieser Link funktioniert nicht",
		"invalid_body":       "Der Link ist ungültig oder abgelaufen. Kehren Sie zur App zurück und öffnen Sie ihn erneut.",
		"expired_title":      "Dieses Formular ist abgelaufen",
		"expired_body":       "Gehen Sie zurück, laden Sie die Seite neu und versuchen Sie es noch einmal.",
	},
}

// DefaultLang is the language of a page whose participant's language is not known.
const DefaultLang = "en"

// Lookup returns the strings of a language tag ("de-DE", "fr", …); unknown ones get English.
func Lookup(tag string) Strings {
	if s, ok := languages[Primary(tag)]; ok {
		return s
	}
	return languages[DefaultLang]
}

// Languages lists the primary language subtags the interface is written in.
func Languages() []string {
	out := make([]string, 0, len(languages))
	for k := range languages {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Translations returns the strings of one primary language subtag (nil when not written).
func Translations(lang string) Strings { return languages[lang] }

// Primary returns the lower-case primary subtag of a language tag: "fr-CA" → "fr".
func Primary(tag string) string {
	p, _, _ := strings.Cut(tag, "-")
	return strings.ToLower(strings.TrimSpace(p))
}

// AcceptLanguage returns the tags of the request's Accept-Language header, best first
// (q=0 left out).
func AcceptLanguage(ctx *fasthttp.RequestCtx) []string {
	raw := string(ctx.Request.Header.Peek("Accept-Language"))
	if raw == "" {
		return nil
	}
	type tq struct {
		tag string
		q   float64
		i   int
	}
	var out []tq
	for i, part := range strings.Split(raw, ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		tag = strings.TrimSpace(tag)
		if tag == "" || tag == "*" || len(tag) > 35 {
			continue
		}
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		if q > 0 {
			out = append(out, tq{tag, q, i})
		}
		if len(out) >= 16 {
			break
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].q > out[b].q })
	tags := make([]string, len(out))
	for i, t := range out {
		tags[i] = t.tag
	}
	return tags
}

// Negotiate returns the best language of the request that the interface is written in
// (a full tag when the browser sent one, e.g. "de-DE"), else DefaultLang.
func Negotiate(ctx *fasthttp.RequestCtx) string {
	for _, tag := range AcceptLanguage(ctx) {
		if _, ok := languages[Primary(tag)]; ok && validTag(tag) {
			return tag
		}
	}
	return DefaultLang
}

// RegionOf returns the upper-case region subtag of a language tag ("en-US" → "US"), or "".
func RegionOf(tag string) string {
	parts := strings.Split(tag, "-")
	for _, p := range parts[1:] {
		if len(p) == 2 {
			return strings.ToUpper(p)
		}
	}
	return ""
}

// validTag reports whether tag looks like a BCP 47 tag (letters, digits and hyphens).
func validTag(tag string) bool {
	for _, c := range tag {
		if !(c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return tag != ""
}
