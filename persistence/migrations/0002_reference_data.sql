-- 0002_reference_data.sql: reference data shipped with the schema (docs/rules.md §3).
--
-- Countries and country languages (fixed ids), the standard qualification catalogue and
-- the default CPI rate card. The migration runner wraps this file in a transaction.
--
-- Standard qualification ids (same id = same concept in every country language):
--    42 AGE               answer_type 5  all country languages
--    43 GENDER            answer_type 0  all country languages
--    45 ZIP               answer_type 5  all country languages
--   100 REGION            answer_type 0  all country languages
--    47 HISPANIC          answer_type 0  US only (en-US, es-US)
--   112 ETHNICITY         answer_type 0  US only (en-US, es-US)
--   101 HOUSEHOLD_INCOME  answer_type 0  all country languages
--   102 EDUCATION         answer_type 0  all country languages
--   103 EMPLOYMENT        answer_type 0  all country languages
--   104 MARITAL_STATUS    answer_type 0  all country languages
--   105 PARENTAL_STATUS   answer_type 0  all country languages
--   106 CHILDREN          answer_type 0  all country languages
--   107 HOUSEHOLD_SIZE    answer_type 0  all country languages
--   108 HOME_OWNERSHIP    answer_type 0  all country languages
--   109 INDUSTRY          answer_type 1  all country languages
--   110 DEVICES_OWNED     answer_type 1  all country languages
--   111 PETS              answer_type 1  all country languages
-- Answer types: 0 single select, 1 multi select, 5 text/number (no answers).
-- Pre-codes start at 1 per question. For the select questions other than REGION and
-- HOUSEHOLD_INCOME a pre-code means the same answer in every country language; REGION and
-- HOUSEHOLD_INCOME answers are country specific (both languages of a country share them).

-- Countries ---------------------------------------------------------------
INSERT INTO countries (id, name, iso_code) VALUES
  (1, 'United States', 'US'),
  (2, 'United Kingdom', 'GB'),
  (3, 'Canada', 'CA'),
  (4, 'Germany', 'DE'),
  (5, 'France', 'FR'),
  (6, 'Australia', 'AU');

-- Country languages -------------------------------------------------------
INSERT INTO country_languages (id, abbr, country_id, language_name) VALUES
  (1, 'en-US', 1, 'English'),
  (2, 'es-US', 1, 'Spanish'),
  (3, 'en-GB', 2, 'English'),
  (4, 'en-CA', 3, 'English'),
  (5, 'fr-CA', 3, 'French'),
  (6, 'de-DE', 4, 'German'),
  (7, 'fr-FR', 5, 'French'),
  (8, 'en-AU', 6, 'English');

-- Standard qualifications --------------------------------------------------
-- en-US (English)
INSERT INTO qualifications (question_id, country_language_id, name, question_text, en_translation, answer_type, required, position, buyer_id) VALUES
  (42, 1, 'AGE', 'What is your age?', 'What is your age?', 5, true, 1, NULL),
  (43, 1, 'GENDER', 'What is your gender?', 'What is your gender?', 0, true, 2, NULL),
  (45, 1, 'ZIP', 'What is your ZIP code?', 'What is your ZIP code?', 5, true, 3, NULL),
  (100, 1, 'REGION', 'In which region of the United States do you live?', 'In which region of the United States do you live?', 0, false, 4, NULL),
  (47, 1, 'HISPANIC', 'Are you of Hispanic, Latino, or Spanish origin?', 'Are you of Hispanic, Latino, or Spanish origin?', 0, false, 5, NULL),
  (112, 1, 'ETHNICITY', 'Which of the following best describes your race?', 'Which of the following best describes your race?', 0, false, 6, NULL),
  (101, 1, 'HOUSEHOLD_INCOME', 'What is your total annual household income before taxes?', 'What is your total annual household income before taxes?', 0, false, 7, NULL),
  (102, 1, 'EDUCATION', 'What is the highest level of education you have completed?', 'What is the highest level of education you have completed?', 0, false, 8, NULL),
  (103, 1, 'EMPLOYMENT', 'What is your current employment status?', 'What is your current employment status?', 0, false, 9, NULL),
  (104, 1, 'MARITAL_STATUS', 'What is your marital status?', 'What is your marital status?', 0, false, 10, NULL),
  (105, 1, 'PARENTAL_STATUS', 'Are you a parent or legal guardian?', 'Are you a parent or legal guardian?', 0, false, 11, NULL),
  (106, 1, 'CHILDREN', 'How many children under the age of 18 live in your household?', 'How many children under the age of 18 live in your household?', 0, false, 12, NULL),
  (107, 1, 'HOUSEHOLD_SIZE', 'Including yourself, how many people live in your household?', 'Including yourself, how many people live in your household?', 0, false, 13, NULL),
  (108, 1, 'HOME_OWNERSHIP', 'Do you own or rent your home?', 'Do you own or rent your home?', 0, false, 14, NULL),
  (109, 1, 'INDUSTRY', 'In which industries do you currently work? Select all that apply.', 'In which industries do you currently work? Select all that apply.', 1, false, 15, NULL),
  (110, 1, 'DEVICES_OWNED', 'Which of the following devices do you own? Select all that apply.', 'Which of the following devices do you own? Select all that apply.', 1, false, 16, NULL),
  (111, 1, 'PETS', 'Which of the following pets live in your household? Select all that apply.', 'Which of the following pets live in your household? Select all that apply.', 1, false, 17, NULL);

-- es-US (Spanish)
INSERT INTO qualifications (question_id, country_language_id, name, question_text, en_translation, answer_type, required, position, buyer_id) VALUES
  (42, 2, 'AGE', '¿Cuál es su edad?', 'What is your age?', 5, true, 1, NULL),
  (43, 2, 'GENDER', '¿Cuál es su género?', 'What is your gender?', 0, true, 2, NULL),
  (45, 2, 'ZIP', '¿Cuál es su código postal (ZIP code)?', 'What is your ZIP code?', 5, true, 3, NULL),
  (100, 2, 'REGION', '¿En qué región de los Estados Unidos vive?', 'In which region of the United States do you live?', 0, false, 4, NULL),
  (47, 2, 'HISPANIC', '¿Es usted de origen hispano, latino o español?', 'Are you of Hispanic, Latino, or Spanish origin?', 0, false, 5, NULL),
  (112, 2, 'ETHNICITY', '¿Cuál de las siguientes opciones describe mejor su raza?', 'Which of the following best describes your race?', 0, false, 6, NULL),
  (101, 2, 'HOUSEHOLD_INCOME', '¿Cuál es el ingreso anual total de su hogar antes de impuestos?', 'What is your total annual household income before taxes?', 0, false, 7, NULL),
  (102, 2, 'EDUCATION', '¿Cuál es el nivel de estudios más alto que ha completado?', 'What is the highest level of education you have completed?', 0, false, 8, NULL),
  (103, 2, 'EMPLOYMENT', '¿Cuál es su situación laboral actual?', 'What is your current employment status?', 0, false, 9, NULL),
  (104, 2, 'MARITAL_STATUS', '¿Cuál es su estado civil?', 'What is your marital status?', 0, false, 10, NULL),
  (105, 2, 'PARENTAL_STATUS', '¿Es usted padre, madre o tutor(a) legal?', 'Are you a parent or legal guardian?', 0, false, 11, NULL),
  (106, 2, 'CHILDREN', '¿Cuántos niños menores de 18 años viven en su hogar?', 'How many children under the age of 18 live in your household?', 0, false, 12, NULL),
  (107, 2, 'HOUSEHOLD_SIZE', 'Incluyéndose a usted, ¿cuántas personas viven en su hogar?', 'Including yourself, how many people live in your household?', 0, false, 13, NULL),
  (108, 2, 'HOME_OWNERSHIP', '¿Su vivienda es propia o alquilada?', 'Do you own or rent your home?', 0, false, 14, NULL),
  (109, 2, 'INDUSTRY', '¿En qué industrias trabaja actualmente? Seleccione todas las que correspondan.', 'In which industries do you currently work? Select all that apply.', 1, false, 15, NULL),
  (110, 2, 'DEVICES_OWNED', '¿Cuáles de los siguientes dispositivos tiene? Seleccione todos los que correspondan.', 'Which of the following devices do you own? Select all that apply.', 1, false, 16, NULL),
  (111, 2, 'PETS', '¿Cuáles de las siguientes mascotas viven en su hogar? Seleccione todas las que correspondan.', 'Which of the following pets live in your household? Select all that apply.', 1, false, 17, NULL);

-- en-GB (English)
INSERT INTO qualifications (question_id, country_language_id, name, question_text, en_translation, answer_type, required, position, buyer_id) VALUES
  (42, 3, 'AGE', 'What is your age?', 'What is your age?', 5, true, 1, NULL),
  (43, 3, 'GENDER', 'What is your gender?', 'What is your gender?', 0, true, 2, NULL),
  (45, 3, 'ZIP', 'What is your postcode?', 'What is your postcode?', 5, true, 3, NULL),
  (100, 3, 'REGION', 'In which region of the UK do you live?', 'In which region of the UK do you live?', 0, false, 4, NULL),
  (101, 3, 'HOUSEHOLD_INCOME', 'What is your total annual household income before tax?', 'What is your total annual household income before tax?', 0, false, 5, NULL),
  (102, 3, 'EDUCATION', 'What is the highest level of education you have completed?', 'What is the highest level of education you have completed?', 0, false, 6, NULL),
  (103, 3, 'EMPLOYMENT', 'What is your current employment status?', 'What is your current employment status?', 0, false, 7, NULL),
  (104, 3, 'MARITAL_STATUS', 'What is your marital status?', 'What is your marital status?', 0, false, 8, NULL),
  (105, 3, 'PARENTAL_STATUS', 'Are you a parent or legal guardian?', 'Are you a parent or legal guardian?', 0, false, 9, NULL),
  (106, 3, 'CHILDREN', 'How many children under the age of 18 live in your household?', 'How many children under the age of 18 live in your household?', 0, false, 10, NULL),
  (107, 3, 'HOUSEHOLD_SIZE', 'Including yourself, how many people live in your household?', 'Including yourself, how many people live in your household?', 0, false, 11, NULL),
  (108, 3, 'HOME_OWNERSHIP', 'Do you own or rent your home?', 'Do you own or rent your home?', 0, false, 12, NULL),
  (109, 3, 'INDUSTRY', 'In which industries do you currently work? Select all that apply.', 'In which industries do you currently work? Select all that apply.', 1, false, 13, NULL),
  (110, 3, 'DEVICES_OWNED', 'Which of the following devices do you own? Select all that apply.', 'Which of the following devices do you own? Select all that apply.', 1, false, 14, NULL),
  (111, 3, 'PETS', 'Which of the following pets live in your household? Select all that apply.', 'Which of the following pets live in your household? Select all that apply.', 1, false, 15, NULL);

-- en-CA (English)
INSERT INTO qualifications (question_id, country_language_id, name, question_text, en_translation, answer_type, required, position, buyer_id) VALUES
  (42, 4, 'AGE', 'What is your age?', 'What is your age?', 5, true, 1, NULL),
  (43, 4, 'GENDER', 'What is your gender?', 'What is your gender?', 0, true, 2, NULL),
  (45, 4, 'ZIP', 'What is your postal code?', 'What is your postal code?', 5, true, 3, NULL),
  (100, 4, 'REGION', 'In which province or territory do you live?', 'In which province or territory do you live?', 0, false, 4, NULL),
  (101, 4, 'HOUSEHOLD_INCOME', 'What is your total annual household income before taxes?', 'What is your total annual household income before taxes?', 0, false, 5, NULL),
  (102, 4, 'EDUCATION', 'What is the highest level of education you have completed?', 'What is the highest level of education you have completed?', 0, false, 6, NULL),
  (103, 4, 'EMPLOYMENT', 'What is your current employment status?', 'What is your current employment status?', 0, false, 7, NULL),
  (104, 4, 'MARITAL_STATUS', 'What is your marital status?', 'What is your marital status?', 0, false, 8, NULL),
  (105, 4, 'PARENTAL_STATUS', 'Are you a parent or legal guardian?', 'Are you a parent or legal guardian?', 0, false, 9, NULL),
  (106, 4, 'CHILDREN', 'How many children under the age of 18 live in your household?', 'How many children under the age of 18 live in your household?', 0, false, 10, NULL),
  (107, 4, 'HOUSEHOLD_SIZE', 'Including yourself, how many people live in your household?', 'Including yourself, how many people live in your household?', 0, false, 11, NULL),
  (108, 4, 'HOME_OWNERSHIP', 'Do you own or rent your home?', 'Do you own or rent your home?', 0, false, 12, NULL),
  (109, 4, 'INDUSTRY', 'In which industries do you currently work? Select all that apply.', 'In which industries do you currently work? Select all that apply.', 1, false, 13, NULL),
  (110, 4, 'DEVICES_OWNED', 'Which of the following devices do you own? Select all that apply.', 'Which of the following devices do you own? Select all that apply.', 1, false, 14, NULL),
  (111, 4, 'PETS', 'Which of the following pets live in your household? Select all that apply.', 'Which of the following pets live in your household? Select all that apply.', 1, false, 15, NULL);

-- fr-CA (French)
INSERT INTO qualifications (question_id, country_language_id, name, question_text, en_translation, answer_type, required, position, buyer_id) VALUES
  (42, 5, 'AGE', 'Quel est votre âge?', 'What is your age?', 5, true, 1, NULL),
  (43, 5, 'GENDER', 'Quel est votre sexe?', 'What is your gender?', 0, true, 2, NULL),
  (45, 5, 'ZIP', 'Quel est votre code postal?', 'What is your postal code?', 5, true, 3, NULL),
  (100, 5, 'REGION', 'Dans quelle province ou quel territoire habitez-vous?', 'In which province or territory do you live?', 0, false, 4, NULL),
  (101, 5, 'HOUSEHOLD_INCOME', 'Quel est le revenu annuel total de votre ménage avant impôts?', 'What is your total annual household income before taxes?', 0, false, 5, NULL),
  (102, 5, 'EDUCATION', 'Quel est le plus haut niveau de scolarité que vous avez atteint?', 'What is the highest level of education you have completed?', 0, false, 6, NULL),
  (103, 5, 'EMPLOYMENT', 'Quelle est votre situation d''emploi actuelle?', 'What is your current employment status?', 0, false, 7, NULL),
  (104, 5, 'MARITAL_STATUS', 'Quel est votre état civil?', 'What is your marital status?', 0, false, 8, NULL),
  (105, 5, 'PARENTAL_STATUS', 'Êtes-vous parent ou tuteur légal?', 'Are you a parent or legal guardian?', 0, false, 9, NULL),
  (106, 5, 'CHILDREN', 'Combien d''enfants de moins de 18 ans vivent dans votre ménage?', 'How many children under the age of 18 live in your household?', 0, false, 10, NULL),
  (107, 5, 'HOUSEHOLD_SIZE', 'En vous comptant, combien de personnes vivent dans votre ménage?', 'Including yourself, how many people live in your household?', 0, false, 11, NULL),
  (108, 5, 'HOME_OWNERSHIP', 'Êtes-vous propriétaire ou locataire de votre logement?', 'Do you own or rent your home?', 0, false, 12, NULL),
  (109, 5, 'INDUSTRY', 'Dans quels secteurs d''activité travaillez-vous actuellement? Sélectionnez toutes les réponses qui s''appliquent.', 'In which industries do you currently work? Select all that apply.', 1, false, 13, NULL),
  (110, 5, 'DEVICES_OWNED', 'Parmi les appareils suivants, lesquels possédez-vous? Sélectionnez toutes les réponses qui s''appliquent.', 'Which of the following devices do you own? Select all that apply.', 1, false, 14, NULL),
  (111, 5, 'PETS', 'Parmi les animaux suivants, lesquels vivent dans votre ménage? Sélectionnez toutes les réponses qui s''appliquent.', 'Which of the following pets live in your household? Select all that apply.', 1, false, 15, NULL);

-- de-DE (German)
INSERT INTO qualifications (question_id, country_language_id, name, question_text, en_translation, answer_type, required, position, buyer_id) VALUES
  (42, 6, 'AGE', 'Wie alt sind Sie?', 'What is your age?', 5, true, 1, NULL),
  (43, 6, 'GENDER', 'Welches Geschlecht haben Sie?', 'What is your gender?', 0, true, 2, NULL),
  (45, 6, 'ZIP', 'Wie lautet Ihre Postleitzahl?', 'What is your postal code?', 5, true, 3, NULL),
  (100, 6, 'REGION', 'In welchem Bundesland wohnen Sie?', 'In which federal state do you live?', 0, false, 4, NULL),
  (101, 6, 'HOUSEHOLD_INCOME', 'Wie hoch ist das jährliche Bruttoeinkommen Ihres Haushalts insgesamt (vor Steuern)?', 'What is your total annual household income before taxes?', 0, false, 5, NULL),
  (102, 6, 'EDUCATION', 'Was ist Ihr höchster Bildungsabschluss?', 'What is the highest level of education you have completed?', 0, false, 6, NULL),
  (103, 6, 'EMPLOYMENT', 'Wie ist Ihre derzeitige berufliche Situation?', 'What is your current employment status?', 0, false, 7, NULL),
  (104, 6, 'MARITAL_STATUS', 'Wie ist Ihr Familienstand?', 'What is your marital status?', 0, false, 8, NULL),
  (105, 6, 'PARENTAL_STATUS', 'Sind Sie Mutter, Vater oder Erziehungsberechtigte(r)?', 'Are you a parent or legal guardian?', 0, false, 9, NULL),
  (106, 6, 'CHILDREN', 'Wie viele Kinder unter 18 Jahren leben in Ihrem Haushalt?', 'How many children under the age of 18 live in your household?', 0, false, 10, NULL),
  (107, 6, 'HOUSEHOLD_SIZE', 'Wie viele Personen leben einschließlich Ihnen in Ihrem Haushalt?', 'Including yourself, how many people live in your household?', 0, false, 11, NULL),
  (108, 6, 'HOME_OWNERSHIP', 'Wohnen Sie im Eigentum oder zur Miete?', 'Do you own or rent your home?', 0, false, 12, NULL),
  (109, 6, 'INDUSTRY', 'In welchen Branchen sind Sie derzeit tätig? Bitte wählen Sie alle zutreffenden aus.', 'In which industries do you currently work? Select all that apply.', 1, false, 13, NULL),
  (110, 6, 'DEVICES_OWNED', 'Welche der folgenden Geräte besitzen Sie? Bitte wählen Sie alle zutreffenden aus.', 'Which of the following devices do you own? Select all that apply.', 1, false, 14, NULL),
  (111, 6, 'PETS', 'Welche der folgenden Haustiere leben in Ihrem Haushalt? Bitte wählen Sie alle zutreffenden aus.', 'Which of the following pets live in your household? Select all that apply.', 1, false, 15, NULL);

-- fr-FR (French)
INSERT INTO qualifications (question_id, country_language_id, name, question_text, en_translation, answer_type, required, position, buyer_id) VALUES
  (42, 7, 'AGE', 'Quel est votre âge ?', 'What is your age?', 5, true, 1, NULL),
  (43, 7, 'GENDER', 'Quel est votre sexe ?', 'What is your gender?', 0, true, 2, NULL),
  (45, 7, 'ZIP', 'Quel est votre code postal ?', 'What is your postal code?', 5, true, 3, NULL),
  (100, 7, 'REGION', 'Dans quelle région habitez-vous ?', 'In which region do you live?', 0, false, 4, NULL),
  (101, 7, 'HOUSEHOLD_INCOME', 'Quel est le revenu annuel brut total de votre foyer (avant impôts) ?', 'What is your total annual household income before taxes?', 0, false, 5, NULL),
  (102, 7, 'EDUCATION', 'Quel est votre plus haut niveau d''études atteint ?', 'What is the highest level of education you have completed?', 0, false, 6, NULL),
  (103, 7, 'EMPLOYMENT', 'Quelle est votre situation professionnelle actuelle ?', 'What is your current employment status?', 0, false, 7, NULL),
  (104, 7, 'MARITAL_STATUS', 'Quelle est votre situation conjugale ?', 'What is your marital status?', 0, false, 8, NULL),
  (105, 7, 'PARENTAL_STATUS', 'Êtes-vous parent ou tuteur légal ?', 'Are you a parent or legal guardian?', 0, false, 9, NULL),
  (106, 7, 'CHILDREN', 'Combien d''enfants de moins de 18 ans vivent dans votre foyer ?', 'How many children under the age of 18 live in your household?', 0, false, 10, NULL),
  (107, 7, 'HOUSEHOLD_SIZE', 'En vous comptant, combien de personnes vivent dans votre foyer ?', 'Including yourself, how many people live in your household?', 0, false, 11, NULL),
  (108, 7, 'HOME_OWNERSHIP', 'Êtes-vous propriétaire ou locataire de votre logement ?', 'Do you own or rent your home?', 0, false, 12, NULL),
  (109, 7, 'INDUSTRY', 'Dans quels secteurs d''activité travaillez-vous actuellement ? Sélectionnez toutes les réponses applicables.', 'In which industries do you currently work? Select all that apply.', 1, false, 13, NULL),
  (110, 7, 'DEVICES_OWNED', 'Parmi les appareils suivants, lesquels possédez-vous ? Sélectionnez toutes les réponses applicables.', 'Which of the following devices do you own? Select all that apply.', 1, false, 14, NULL),
  (111, 7, 'PETS', 'Parmi les animaux suivants, lesquels vivent dans votre foyer ? Sélectionnez toutes les réponses applicables.', 'Which of the following pets live in your household? Select all that apply.', 1, false, 15, NULL);

-- en-AU (English)
INSERT INTO qualifications (question_id, country_language_id, name, question_text, en_translation, answer_type, required, position, buyer_id) VALUES
  (42, 8, 'AGE', 'What is your age?', 'What is your age?', 5, true, 1, NULL),
  (43, 8, 'GENDER', 'What is your gender?', 'What is your gender?', 0, true, 2, NULL),
  (45, 8, 'ZIP', 'What is your postcode?', 'What is your postcode?', 5, true, 3, NULL),
  (100, 8, 'REGION', 'In which state or territory do you live?', 'In which state or territory do you live?', 0, false, 4, NULL),
  (101, 8, 'HOUSEHOLD_INCOME', 'What is your total annual household income before tax?', 'What is your total annual household income before tax?', 0, false, 5, NULL),
  (102, 8, 'EDUCATION', 'What is the highest level of education you have completed?', 'What is the highest level of education you have completed?', 0, false, 6, NULL),
  (103, 8, 'EMPLOYMENT', 'What is your current employment status?', 'What is your current employment status?', 0, false, 7, NULL),
  (104, 8, 'MARITAL_STATUS', 'What is your marital status?', 'What is your marital status?', 0, false, 8, NULL),
  (105, 8, 'PARENTAL_STATUS', 'Are you a parent or legal guardian?', 'Are you a parent or legal guardian?', 0, false, 9, NULL),
  (106, 8, 'CHILDREN', 'How many children under the age of 18 live in your household?', 'How many children under the age of 18 live in your household?', 0, false, 10, NULL),
  (107, 8, 'HOUSEHOLD_SIZE', 'Including yourself, how many people live in your household?', 'Including yourself, how many people live in your household?', 0, false, 11, NULL),
  (108, 8, 'HOME_OWNERSHIP', 'Do you own or rent your home?', 'Do you own or rent your home?', 0, false, 12, NULL),
  (109, 8, 'INDUSTRY', 'In which industries do you currently work? Select all that apply.', 'In which industries do you currently work? Select all that apply.', 1, false, 13, NULL),
  (110, 8, 'DEVICES_OWNED', 'Which of the following devices do you own? Select all that apply.', 'Which of the following devices do you own? Select all that apply.', 1, false, 14, NULL),
  (111, 8, 'PETS', 'Which of the following pets live in your household? Select all that apply.', 'Which of the following pets live in your household? Select all that apply.', 1, false, 15, NULL);

-- Qualification answers ----------------------------------------------------
-- GENDER (43), en-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (43, 1, 1, 'Male', 'Male', 1),
  (43, 1, 2, 'Female', 'Female', 2);

-- REGION (100), en-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (100, 1, 1, 'New England (CT, MA, ME, NH, RI, VT)', 'New England (CT, MA, ME, NH, RI, VT)', 1),
  (100, 1, 2, 'Middle Atlantic (NJ, NY, PA)', 'Middle Atlantic (NJ, NY, PA)', 2),
  (100, 1, 3, 'East North Central (IL, IN, MI, OH, WI)', 'East North Central (IL, IN, MI, OH, WI)', 3),
  (100, 1, 4, 'West North Central (IA, KS, MN, MO, ND, NE, SD)', 'West North Central (IA, KS, MN, MO, ND, NE, SD)', 4),
  (100, 1, 5, 'South Atlantic (DC, DE, FL, GA, MD, NC, SC, VA, WV)', 'South Atlantic (DC, DE, FL, GA, MD, NC, SC, VA, WV)', 5),
  (100, 1, 6, 'East South Central (AL, KY, MS, TN)', 'East South Central (AL, KY, MS, TN)', 6),
  (100, 1, 7, 'West South Central (AR, LA, OK, TX)', 'West South Central (AR, LA, OK, TX)', 7),
  (100, 1, 8, 'Mountain (AZ, CO, ID, MT, NM, NV, UT, WY)', 'Mountain (AZ, CO, ID, MT, NM, NV, UT, WY)', 8),
  (100, 1, 9, 'Pacific (AK, CA, HI, OR, WA)', 'Pacific (AK, CA, HI, OR, WA)', 9);

-- HISPANIC (47), en-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (47, 1, 1, 'No, not of Hispanic, Latino, or Spanish origin', 'No, not of Hispanic, Latino, or Spanish origin', 1),
  (47, 1, 2, 'Yes, Mexican, Mexican American, Chicano', 'Yes, Mexican, Mexican American, Chicano', 2),
  (47, 1, 3, 'Yes, Puerto Rican', 'Yes, Puerto Rican', 3),
  (47, 1, 4, 'Yes, Cuban', 'Yes, Cuban', 4),
  (47, 1, 5, 'Yes, another Hispanic, Latino, or Spanish origin', 'Yes, another Hispanic, Latino, or Spanish origin', 5);

-- ETHNICITY (112), en-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (112, 1, 1, 'White', 'White', 1),
  (112, 1, 2, 'Black or African American', 'Black or African American', 2),
  (112, 1, 3, 'American Indian or Alaska Native', 'American Indian or Alaska Native', 3),
  (112, 1, 4, 'Asian', 'Asian', 4),
  (112, 1, 5, 'Native Hawaiian or Other Pacific Islander', 'Native Hawaiian or Other Pacific Islander', 5),
  (112, 1, 6, 'Some other race', 'Some other race', 6),
  (112, 1, 7, 'Two or more races', 'Two or more races', 7),
  (112, 1, 8, 'Prefer not to say', 'Prefer not to say', 8);

-- HOUSEHOLD_INCOME (101), en-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (101, 1, 1, 'Less than $15,000', 'Less than $15,000', 1),
  (101, 1, 2, '$15,000 to $24,999', '$15,000 to $24,999', 2),
  (101, 1, 3, '$25,000 to $34,999', '$25,000 to $34,999', 3),
  (101, 1, 4, '$35,000 to $49,999', '$35,000 to $49,999', 4),
  (101, 1, 5, '$50,000 to $74,999', '$50,000 to $74,999', 5),
  (101, 1, 6, '$75,000 to $99,999', '$75,000 to $99,999', 6),
  (101, 1, 7, '$100,000 to $149,999', '$100,000 to $149,999', 7),
  (101, 1, 8, '$150,000 to $199,999', '$150,000 to $199,999', 8),
  (101, 1, 9, '$200,000 or more', '$200,000 or more', 9),
  (101, 1, 10, 'Prefer not to say', 'Prefer not to say', 10);

-- EDUCATION (102), en-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (102, 1, 1, 'Less than high school', 'Less than high school', 1),
  (102, 1, 2, 'High school graduate or GED', 'High school graduate or GED', 2),
  (102, 1, 3, 'Vocational or technical certificate', 'Vocational or technical certificate', 3),
  (102, 1, 4, 'Some college, no degree', 'Some college, no degree', 4),
  (102, 1, 5, 'Associate degree', 'Associate degree', 5),
  (102, 1, 6, 'Bachelor''s degree', 'Bachelor''s degree', 6),
  (102, 1, 7, 'Master''s degree', 'Master''s degree', 7),
  (102, 1, 8, 'Doctorate or professional degree (e.g. PhD, MD, JD)', 'Doctorate or professional degree (e.g. PhD, MD, JD)', 8),
  (102, 1, 9, 'Prefer not to say', 'Prefer not to say', 9);

-- EMPLOYMENT (103), en-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (103, 1, 1, 'Employed full-time', 'Employed full-time', 1),
  (103, 1, 2, 'Employed part-time', 'Employed part-time', 2),
  (103, 1, 3, 'Self-employed', 'Self-employed', 3),
  (103, 1, 4, 'Unemployed and looking for work', 'Unemployed and looking for work', 4),
  (103, 1, 5, 'Unemployed and not looking for work', 'Unemployed and not looking for work', 5),
  (103, 1, 6, 'Student', 'Student', 6),
  (103, 1, 7, 'Homemaker', 'Homemaker', 7),
  (103, 1, 8, 'Retired', 'Retired', 8),
  (103, 1, 9, 'Unable to work', 'Unable to work', 9),
  (103, 1, 10, 'Prefer not to say', 'Prefer not to say', 10);

-- MARITAL_STATUS (104), en-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (104, 1, 1, 'Single, never married', 'Single, never married', 1),
  (104, 1, 2, 'Married', 'Married', 2),
  (104, 1, 3, 'Living with a partner', 'Living with a partner', 3),
  (104, 1, 4, 'Separated', 'Separated', 4),
  (104, 1, 5, 'Divorced', 'Divorced', 5),
  (104, 1, 6, 'Widowed', 'Widowed', 6),
  (104, 1, 7, 'Prefer not to say', 'Prefer not to say', 7);

-- PARENTAL_STATUS (105), en-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (105, 1, 1, 'Yes, of at least one child under 18', 'Yes, of at least one child under 18', 1),
  (105, 1, 2, 'Yes, but all my children are 18 or older', 'Yes, but all my children are 18 or older', 2),
  (105, 1, 3, 'No', 'No', 3);

-- CHILDREN (106), en-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (106, 1, 1, 'None', 'None', 1),
  (106, 1, 2, '1', '1', 2),
  (106, 1, 3, '2', '2', 3),
  (106, 1, 4, '3', '3', 4),
  (106, 1, 5, '4 or more', '4 or more', 5);

-- HOUSEHOLD_SIZE (107), en-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (107, 1, 1, '1 (just me)', '1 (just me)', 1),
  (107, 1, 2, '2', '2', 2),
  (107, 1, 3, '3', '3', 3),
  (107, 1, 4, '4', '4', 4),
  (107, 1, 5, '5', '5', 5),
  (107, 1, 6, '6 or more', '6 or more', 6);

-- HOME_OWNERSHIP (108), en-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (108, 1, 1, 'Own outright (no mortgage)', 'Own outright (no mortgage)', 1),
  (108, 1, 2, 'Own with a mortgage', 'Own with a mortgage', 2),
  (108, 1, 3, 'Rent', 'Rent', 3),
  (108, 1, 4, 'Live with parents or family without paying rent', 'Live with parents or family without paying rent', 4),
  (108, 1, 5, 'Other', 'Other', 5);

-- INDUSTRY (109), en-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (109, 1, 1, 'Advertising and marketing', 'Advertising and marketing', 1),
  (109, 1, 2, 'Agriculture, forestry and fishing', 'Agriculture, forestry and fishing', 2),
  (109, 1, 3, 'Automotive', 'Automotive', 3),
  (109, 1, 4, 'Banking and financial services', 'Banking and financial services', 4),
  (109, 1, 5, 'Construction', 'Construction', 5),
  (109, 1, 6, 'Education', 'Education', 6),
  (109, 1, 7, 'Energy and utilities', 'Energy and utilities', 7),
  (109, 1, 8, 'Government and public administration', 'Government and public administration', 8),
  (109, 1, 9, 'Healthcare', 'Healthcare', 9),
  (109, 1, 10, 'Hospitality and tourism', 'Hospitality and tourism', 10),
  (109, 1, 11, 'Information technology', 'Information technology', 11),
  (109, 1, 12, 'Insurance', 'Insurance', 12),
  (109, 1, 13, 'Legal services', 'Legal services', 13),
  (109, 1, 14, 'Manufacturing', 'Manufacturing', 14),
  (109, 1, 15, 'Market research', 'Market research', 15),
  (109, 1, 16, 'Media and entertainment', 'Media and entertainment', 16),
  (109, 1, 17, 'Non-profit', 'Non-profit', 17),
  (109, 1, 18, 'Pharmaceuticals and biotechnology', 'Pharmaceuticals and biotechnology', 18),
  (109, 1, 19, 'Real estate', 'Real estate', 19),
  (109, 1, 20, 'Retail', 'Retail', 20),
  (109, 1, 21, 'Telecommunications', 'Telecommunications', 21),
  (109, 1, 22, 'Transportation and logistics', 'Transportation and logistics', 22),
  (109, 1, 23, 'Other', 'Other', 23),
  (109, 1, 24, 'I am not currently working', 'I am not currently working', 24);

-- DEVICES_OWNED (110), en-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (110, 1, 1, 'Smartphone', 'Smartphone', 1),
  (110, 1, 2, 'Tablet', 'Tablet', 2),
  (110, 1, 3, 'Laptop computer', 'Laptop computer', 3),
  (110, 1, 4, 'Desktop computer', 'Desktop computer', 4),
  (110, 1, 5, 'Smart TV', 'Smart TV', 5),
  (110, 1, 6, 'Streaming device (e.g. Roku, Apple TV, Chromecast)', 'Streaming device (e.g. Roku, Apple TV, Chromecast)', 6),
  (110, 1, 7, 'Video game console', 'Video game console', 7),
  (110, 1, 8, 'Smartwatch or fitness tracker', 'Smartwatch or fitness tracker', 8),
  (110, 1, 9, 'Smart speaker (e.g. Amazon Echo, Google Nest)', 'Smart speaker (e.g. Amazon Echo, Google Nest)', 9),
  (110, 1, 10, 'E-reader', 'E-reader', 10),
  (110, 1, 11, 'Virtual reality headset', 'Virtual reality headset', 11),
  (110, 1, 12, 'None of these', 'None of these', 12);

-- PETS (111), en-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (111, 1, 1, 'Dog', 'Dog', 1),
  (111, 1, 2, 'Cat', 'Cat', 2),
  (111, 1, 3, 'Fish', 'Fish', 3),
  (111, 1, 4, 'Bird', 'Bird', 4),
  (111, 1, 5, 'Small mammal (e.g. rabbit, hamster, guinea pig)', 'Small mammal (e.g. rabbit, hamster, guinea pig)', 5),
  (111, 1, 6, 'Reptile or amphibian', 'Reptile or amphibian', 6),
  (111, 1, 7, 'Horse', 'Horse', 7),
  (111, 1, 8, 'Other pet', 'Other pet', 8),
  (111, 1, 9, 'No pets', 'No pets', 9);

-- GENDER (43), es-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (43, 2, 1, 'Hombre', 'Male', 1),
  (43, 2, 2, 'Mujer', 'Female', 2);

-- REGION (100), es-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (100, 2, 1, 'Nueva Inglaterra (CT, MA, ME, NH, RI, VT)', 'New England (CT, MA, ME, NH, RI, VT)', 1),
  (100, 2, 2, 'Atlántico Medio (NJ, NY, PA)', 'Middle Atlantic (NJ, NY, PA)', 2),
  (100, 2, 3, 'Centro Noreste (IL, IN, MI, OH, WI)', 'East North Central (IL, IN, MI, OH, WI)', 3),
  (100, 2, 4, 'Centro Noroeste (IA, KS, MN, MO, ND, NE, SD)', 'West North Central (IA, KS, MN, MO, ND, NE, SD)', 4),
  (100, 2, 5, 'Atlántico Sur (DC, DE, FL, GA, MD, NC, SC, VA, WV)', 'South Atlantic (DC, DE, FL, GA, MD, NC, SC, VA, WV)', 5),
  (100, 2, 6, 'Centro Sureste (AL, KY, MS, TN)', 'East South Central (AL, KY, MS, TN)', 6),
  (100, 2, 7, 'Centro Suroeste (AR, LA, OK, TX)', 'West South Central (AR, LA, OK, TX)', 7),
  (100, 2, 8, 'Montaña (AZ, CO, ID, MT, NM, NV, UT, WY)', 'Mountain (AZ, CO, ID, MT, NM, NV, UT, WY)', 8),
  (100, 2, 9, 'Pacífico (AK, CA, HI, OR, WA)', 'Pacific (AK, CA, HI, OR, WA)', 9);

-- HISPANIC (47), es-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (47, 2, 1, 'No, no es de origen hispano, latino o español', 'No, not of Hispanic, Latino, or Spanish origin', 1),
  (47, 2, 2, 'Sí, mexicano, mexicano americano, chicano', 'Yes, Mexican, Mexican American, Chicano', 2),
  (47, 2, 3, 'Sí, puertorriqueño', 'Yes, Puerto Rican', 3),
  (47, 2, 4, 'Sí, cubano', 'Yes, Cuban', 4),
  (47, 2, 5, 'Sí, otro origen hispano, latino o español', 'Yes, another Hispanic, Latino, or Spanish origin', 5);

-- ETHNICITY (112), es-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (112, 2, 1, 'Blanca', 'White', 1),
  (112, 2, 2, 'Negra o afroamericana', 'Black or African American', 2),
  (112, 2, 3, 'Indígena americana o nativa de Alaska', 'American Indian or Alaska Native', 3),
  (112, 2, 4, 'Asiática', 'Asian', 4),
  (112, 2, 5, 'Nativa de Hawái u otras islas del Pacífico', 'Native Hawaiian or Other Pacific Islander', 5),
  (112, 2, 6, 'Otra raza', 'Some other race', 6),
  (112, 2, 7, 'Dos o más razas', 'Two or more races', 7),
  (112, 2, 8, 'Prefiero no responder', 'Prefer not to say', 8);

-- HOUSEHOLD_INCOME (101), es-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (101, 2, 1, 'Menos de $15,000', 'Less than $15,000', 1),
  (101, 2, 2, '$15,000 a $24,999', '$15,000 to $24,999', 2),
  (101, 2, 3, '$25,000 a $34,999', '$25,000 to $34,999', 3),
  (101, 2, 4, '$35,000 a $49,999', '$35,000 to $49,999', 4),
  (101, 2, 5, '$50,000 a $74,999', '$50,000 to $74,999', 5),
  (101, 2, 6, '$75,000 a $99,999', '$75,000 to $99,999', 6),
  (101, 2, 7, '$100,000 a $149,999', '$100,000 to $149,999', 7),
  (101, 2, 8, '$150,000 a $199,999', '$150,000 to $199,999', 8),
  (101, 2, 9, '$200,000 o más', '$200,000 or more', 9),
  (101, 2, 10, 'Prefiero no responder', 'Prefer not to say', 10);

-- EDUCATION (102), es-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (102, 2, 1, 'Escuela secundaria (high school) incompleta', 'Less than high school', 1),
  (102, 2, 2, 'Graduado(a) de la escuela secundaria (high school) o GED', 'High school graduate or GED', 2),
  (102, 2, 3, 'Certificado vocacional o técnico', 'Vocational or technical certificate', 3),
  (102, 2, 4, 'Algunos estudios universitarios, sin título', 'Some college, no degree', 4),
  (102, 2, 5, 'Título asociado (associate degree)', 'Associate degree', 5),
  (102, 2, 6, 'Licenciatura (bachelor''s degree)', 'Bachelor''s degree', 6),
  (102, 2, 7, 'Maestría', 'Master''s degree', 7),
  (102, 2, 8, 'Doctorado o título profesional (p. ej., PhD, MD, JD)', 'Doctorate or professional degree (e.g. PhD, MD, JD)', 8),
  (102, 2, 9, 'Prefiero no responder', 'Prefer not to say', 9);

-- EMPLOYMENT (103), es-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (103, 2, 1, 'Empleado(a) a tiempo completo', 'Employed full-time', 1),
  (103, 2, 2, 'Empleado(a) a tiempo parcial', 'Employed part-time', 2),
  (103, 2, 3, 'Trabajador(a) por cuenta propia', 'Self-employed', 3),
  (103, 2, 4, 'Desempleado(a) y buscando trabajo', 'Unemployed and looking for work', 4),
  (103, 2, 5, 'Desempleado(a) y sin buscar trabajo', 'Unemployed and not looking for work', 5),
  (103, 2, 6, 'Estudiante', 'Student', 6),
  (103, 2, 7, 'Ama/amo de casa', 'Homemaker', 7),
  (103, 2, 8, 'Jubilado(a)', 'Retired', 8),
  (103, 2, 9, 'Incapacitado(a) para trabajar', 'Unable to work', 9),
  (103, 2, 10, 'Prefiero no responder', 'Prefer not to say', 10);

-- MARITAL_STATUS (104), es-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (104, 2, 1, 'Soltero(a), nunca casado(a)', 'Single, never married', 1),
  (104, 2, 2, 'Casado(a)', 'Married', 2),
  (104, 2, 3, 'Vive en pareja (unión libre)', 'Living with a partner', 3),
  (104, 2, 4, 'Separado(a)', 'Separated', 4),
  (104, 2, 5, 'Divorciado(a)', 'Divorced', 5),
  (104, 2, 6, 'Viudo(a)', 'Widowed', 6),
  (104, 2, 7, 'Prefiero no responder', 'Prefer not to say', 7);

-- PARENTAL_STATUS (105), es-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (105, 2, 1, 'Sí, de al menos un(a) hijo(a) menor de 18 años', 'Yes, of at least one child under 18', 1),
  (105, 2, 2, 'Sí, pero todos mis hijos tienen 18 años o más', 'Yes, but all my children are 18 or older', 2),
  (105, 2, 3, 'No', 'No', 3);

-- CHILDREN (106), es-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (106, 2, 1, 'Ninguno', 'None', 1),
  (106, 2, 2, '1', '1', 2),
  (106, 2, 3, '2', '2', 3),
  (106, 2, 4, '3', '3', 4),
  (106, 2, 5, '4 o más', '4 or more', 5);

-- HOUSEHOLD_SIZE (107), es-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (107, 2, 1, '1 (solo yo)', '1 (just me)', 1),
  (107, 2, 2, '2', '2', 2),
  (107, 2, 3, '3', '3', 3),
  (107, 2, 4, '4', '4', 4),
  (107, 2, 5, '5', '5', 5),
  (107, 2, 6, '6 o más', '6 or more', 6);

-- HOME_OWNERSHIP (108), es-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (108, 2, 1, 'Propia, sin hipoteca', 'Own outright (no mortgage)', 1),
  (108, 2, 2, 'Propia, con hipoteca', 'Own with a mortgage', 2),
  (108, 2, 3, 'Alquilada', 'Rent', 3),
  (108, 2, 4, 'Vivo con mis padres o familiares sin pagar alquiler', 'Live with parents or family without paying rent', 4),
  (108, 2, 5, 'Otra situación', 'Other', 5);

-- INDUSTRY (109), es-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (109, 2, 1, 'Publicidad y mercadeo', 'Advertising and marketing', 1),
  (109, 2, 2, 'Agricultura, silvicultura y pesca', 'Agriculture, forestry and fishing', 2),
  (109, 2, 3, 'Industria automotriz', 'Automotive', 3),
  (109, 2, 4, 'Banca y servicios financieros', 'Banking and financial services', 4),
  (109, 2, 5, 'Construcción', 'Construction', 5),
  (109, 2, 6, 'Educación', 'Education', 6),
  (109, 2, 7, 'Energía y servicios públicos', 'Energy and utilities', 7),
  (109, 2, 8, 'Gobierno y administración pública', 'Government and public administration', 8),
  (109, 2, 9, 'Salud y atención médica', 'Healthcare', 9),
  (109, 2, 10, 'Hotelería y turismo', 'Hospitality and tourism', 10),
  (109, 2, 11, 'Tecnología de la información', 'Information technology', 11),
  (109, 2, 12, 'Seguros', 'Insurance', 12),
  (109, 2, 13, 'Servicios legales', 'Legal services', 13),
  (109, 2, 14, 'Manufactura', 'Manufacturing', 14),
  (109, 2, 15, 'Investigación de mercados', 'Market research', 15),
  (109, 2, 16, 'Medios de comunicación y entretenimiento', 'Media and entertainment', 16),
  (109, 2, 17, 'Organizaciones sin fines de lucro', 'Non-profit', 17),
  (109, 2, 18, 'Farmacéutica y biotecnología', 'Pharmaceuticals and biotechnology', 18),
  (109, 2, 19, 'Bienes raíces', 'Real estate', 19),
  (109, 2, 20, 'Comercio minorista', 'Retail', 20),
  (109, 2, 21, 'Telecomunicaciones', 'Telecommunications', 21),
  (109, 2, 22, 'Transporte y logística', 'Transportation and logistics', 22),
  (109, 2, 23, 'Otra', 'Other', 23),
  (109, 2, 24, 'Actualmente no trabajo', 'I am not currently working', 24);

-- DEVICES_OWNED (110), es-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (110, 2, 1, 'Teléfono inteligente (smartphone)', 'Smartphone', 1),
  (110, 2, 2, 'Tableta', 'Tablet', 2),
  (110, 2, 3, 'Computadora portátil (laptop)', 'Laptop computer', 3),
  (110, 2, 4, 'Computadora de escritorio', 'Desktop computer', 4),
  (110, 2, 5, 'Televisor inteligente (smart TV)', 'Smart TV', 5),
  (110, 2, 6, 'Dispositivo de streaming (p. ej., Roku, Apple TV, Chromecast)', 'Streaming device (e.g. Roku, Apple TV, Chromecast)', 6),
  (110, 2, 7, 'Consola de videojuegos', 'Video game console', 7),
  (110, 2, 8, 'Reloj inteligente o monitor de actividad física', 'Smartwatch or fitness tracker', 8),
  (110, 2, 9, 'Altavoz inteligente (p. ej., Amazon Echo, Google Nest)', 'Smart speaker (e.g. Amazon Echo, Google Nest)', 9),
  (110, 2, 10, 'Lector de libros electrónicos', 'E-reader', 10),
  (110, 2, 11, 'Visor de realidad virtual', 'Virtual reality headset', 11),
  (110, 2, 12, 'Ninguno de estos', 'None of these', 12);

-- PETS (111), es-US
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (111, 2, 1, 'Perro', 'Dog', 1),
  (111, 2, 2, 'Gato', 'Cat', 2),
  (111, 2, 3, 'Peces', 'Fish', 3),
  (111, 2, 4, 'Ave', 'Bird', 4),
  (111, 2, 5, 'Mamífero pequeño (p. ej., conejo, hámster, cobayo)', 'Small mammal (e.g. rabbit, hamster, guinea pig)', 5),
  (111, 2, 6, 'Reptil o anfibio', 'Reptile or amphibian', 6),
  (111, 2, 7, 'Caballo', 'Horse', 7),
  (111, 2, 8, 'Otra mascota', 'Other pet', 8),
  (111, 2, 9, 'No tengo mascotas', 'No pets', 9);

-- GENDER (43), en-GB
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (43, 3, 1, 'Male', 'Male', 1),
  (43, 3, 2, 'Female', 'Female', 2);

-- REGION (100), en-GB
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (100, 3, 1, 'North East', 'North East', 1),
  (100, 3, 2, 'North West', 'North West', 2),
  (100, 3, 3, 'Yorkshire and the Humber', 'Yorkshire and the Humber', 3),
  (100, 3, 4, 'East Midlands', 'East Midlands', 4),
  (100, 3, 5, 'West Midlands', 'West Midlands', 5),
  (100, 3, 6, 'East of England', 'East of England', 6),
  (100, 3, 7, 'London', 'London', 7),
  (100, 3, 8, 'South East', 'South East', 8),
  (100, 3, 9, 'South West', 'South West', 9),
  (100, 3, 10, 'Wales', 'Wales', 10),
  (100, 3, 11, 'Scotland', 'Scotland', 11),
  (100, 3, 12, 'Northern Ireland', 'Northern Ireland', 12);

-- HOUSEHOLD_INCOME (101), en-GB
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (101, 3, 1, 'Under £10,000', 'Under £10,000', 1),
  (101, 3, 2, '£10,000 to £19,999', '£10,000 to £19,999', 2),
  (101, 3, 3, '£20,000 to £29,999', '£20,000 to £29,999', 3),
  (101, 3, 4, '£30,000 to £39,999', '£30,000 to £39,999', 4),
  (101, 3, 5, '£40,000 to £49,999', '£40,000 to £49,999', 5),
  (101, 3, 6, '£50,000 to £74,999', '£50,000 to £74,999', 6),
  (101, 3, 7, '£75,000 to £99,999', '£75,000 to £99,999', 7),
  (101, 3, 8, '£100,000 to £149,999', '£100,000 to £149,999', 8),
  (101, 3, 9, '£150,000 or more', '£150,000 or more', 9),
  (101, 3, 10, 'Prefer not to say', 'Prefer not to say', 10);

-- EDUCATION (102), en-GB
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (102, 3, 1, 'No formal qualifications', 'No formal qualifications', 1),
  (102, 3, 2, 'GCSEs, A-levels or equivalent', 'GCSEs, A-levels or equivalent', 2),
  (102, 3, 3, 'Vocational qualification (e.g. NVQ, BTEC, apprenticeship)', 'Vocational qualification (e.g. NVQ, BTEC, apprenticeship)', 3),
  (102, 3, 4, 'Some university, no degree', 'Some university, no degree', 4),
  (102, 3, 5, 'HND, HNC or foundation degree', 'HND, HNC or foundation degree', 5),
  (102, 3, 6, 'Bachelor''s degree', 'Bachelor''s degree', 6),
  (102, 3, 7, 'Master''s degree', 'Master''s degree', 7),
  (102, 3, 8, 'Doctorate (e.g. PhD)', 'Doctorate (e.g. PhD)', 8),
  (102, 3, 9, 'Prefer not to say', 'Prefer not to say', 9);

-- EMPLOYMENT (103), en-GB
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (103, 3, 1, 'Employed full-time', 'Employed full-time', 1),
  (103, 3, 2, 'Employed part-time', 'Employed part-time', 2),
  (103, 3, 3, 'Self-employed', 'Self-employed', 3),
  (103, 3, 4, 'Unemployed and looking for work', 'Unemployed and looking for work', 4),
  (103, 3, 5, 'Unemployed and not looking for work', 'Unemployed and not looking for work', 5),
  (103, 3, 6, 'Student', 'Student', 6),
  (103, 3, 7, 'Looking after the home or family', 'Looking after the home or family', 7),
  (103, 3, 8, 'Retired', 'Retired', 8),
  (103, 3, 9, 'Unable to work', 'Unable to work', 9),
  (103, 3, 10, 'Prefer not to say', 'Prefer not to say', 10);

-- MARITAL_STATUS (104), en-GB
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (104, 3, 1, 'Single, never married', 'Single, never married', 1),
  (104, 3, 2, 'Married or in a civil partnership', 'Married or in a civil partnership', 2),
  (104, 3, 3, 'Living with a partner', 'Living with a partner', 3),
  (104, 3, 4, 'Separated', 'Separated', 4),
  (104, 3, 5, 'Divorced', 'Divorced', 5),
  (104, 3, 6, 'Widowed', 'Widowed', 6),
  (104, 3, 7, 'Prefer not to say', 'Prefer not to say', 7);

-- PARENTAL_STATUS (105), en-GB
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (105, 3, 1, 'Yes, of at least one child under 18', 'Yes, of at least one child under 18', 1),
  (105, 3, 2, 'Yes, but all my children are 18 or older', 'Yes, but all my children are 18 or older', 2),
  (105, 3, 3, 'No', 'No', 3);

-- CHILDREN (106), en-GB
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (106, 3, 1, 'None', 'None', 1),
  (106, 3, 2, '1', '1', 2),
  (106, 3, 3, '2', '2', 3),
  (106, 3, 4, '3', '3', 4),
  (106, 3, 5, '4 or more', '4 or more', 5);

-- HOUSEHOLD_SIZE (107), en-GB
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (107, 3, 1, '1 (just me)', '1 (just me)', 1),
  (107, 3, 2, '2', '2', 2),
  (107, 3, 3, '3', '3', 3),
  (107, 3, 4, '4', '4', 4),
  (107, 3, 5, '5', '5', 5),
  (107, 3, 6, '6 or more', '6 or more', 6);

-- HOME_OWNERSHIP (108), en-GB
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (108, 3, 1, 'Own outright (no mortgage)', 'Own outright (no mortgage)', 1),
  (108, 3, 2, 'Own with a mortgage', 'Own with a mortgage', 2),
  (108, 3, 3, 'Rent', 'Rent', 3),
  (108, 3, 4, 'Live with parents or family without paying rent', 'Live with parents or family without paying rent', 4),
  (108, 3, 5, 'Other', 'Other', 5);

-- INDUSTRY (109), en-GB
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (109, 3, 1, 'Advertising and marketing', 'Advertising and marketing', 1),
  (109, 3, 2, 'Agriculture, forestry and fishing', 'Agriculture, forestry and fishing', 2),
  (109, 3, 3, 'Automotive', 'Automotive', 3),
  (109, 3, 4, 'Banking and financial services', 'Banking and financial services', 4),
  (109, 3, 5, 'Construction', 'Construction', 5),
  (109, 3, 6, 'Education', 'Education', 6),
  (109, 3, 7, 'Energy and utilities', 'Energy and utilities', 7),
  (109, 3, 8, 'Government and public administration', 'Government and public administration', 8),
  (109, 3, 9, 'Healthcare', 'Healthcare', 9),
  (109, 3, 10, 'Hospitality and tourism', 'Hospitality and tourism', 10),
  (109, 3, 11, 'Information technology', 'Information technology', 11),
  (109, 3, 12, 'Insurance', 'Insurance', 12),
  (109, 3, 13, 'Legal services', 'Legal services', 13),
  (109, 3, 14, 'Manufacturing', 'Manufacturing', 14),
  (109, 3, 15, 'Market research', 'Market research', 15),
  (109, 3, 16, 'Media and entertainment', 'Media and entertainment', 16),
  (109, 3, 17, 'Charity or non-profit', 'Charity or non-profit', 17),
  (109, 3, 18, 'Pharmaceuticals and biotechnology', 'Pharmaceuticals and biotechnology', 18),
  (109, 3, 19, 'Real estate', 'Real estate', 19),
  (109, 3, 20, 'Retail', 'Retail', 20),
  (109, 3, 21, 'Telecommunications', 'Telecommunications', 21),
  (109, 3, 22, 'Transportation and logistics', 'Transportation and logistics', 22),
  (109, 3, 23, 'Other', 'Other', 23),
  (109, 3, 24, 'I am not currently working', 'I am not currently working', 24);

-- DEVICES_OWNED (110), en-GB
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (110, 3, 1, 'Smartphone', 'Smartphone', 1),
  (110, 3, 2, 'Tablet', 'Tablet', 2),
  (110, 3, 3, 'Laptop computer', 'Laptop computer', 3),
  (110, 3, 4, 'Desktop computer', 'Desktop computer', 4),
  (110, 3, 5, 'Smart TV', 'Smart TV', 5),
  (110, 3, 6, 'Streaming device (e.g. Fire TV Stick, Apple TV, Chromecast)', 'Streaming device (e.g. Fire TV Stick, Apple TV, Chromecast)', 6),
  (110, 3, 7, 'Games console', 'Games console', 7),
  (110, 3, 8, 'Smartwatch or fitness tracker', 'Smartwatch or fitness tracker', 8),
  (110, 3, 9, 'Smart speaker (e.g. Amazon Echo, Google Nest)', 'Smart speaker (e.g. Amazon Echo, Google Nest)', 9),
  (110, 3, 10, 'E-reader', 'E-reader', 10),
  (110, 3, 11, 'Virtual reality headset', 'Virtual reality headset', 11),
  (110, 3, 12, 'None of these', 'None of these', 12);

-- PETS (111), en-GB
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (111, 3, 1, 'Dog', 'Dog', 1),
  (111, 3, 2, 'Cat', 'Cat', 2),
  (111, 3, 3, 'Fish', 'Fish', 3),
  (111, 3, 4, 'Bird', 'Bird', 4),
  (111, 3, 5, 'Small mammal (e.g. rabbit, hamster, guinea pig)', 'Small mammal (e.g. rabbit, hamster, guinea pig)', 5),
  (111, 3, 6, 'Reptile or amphibian', 'Reptile or amphibian', 6),
  (111, 3, 7, 'Horse', 'Horse', 7),
  (111, 3, 8, 'Other pet', 'Other pet', 8),
  (111, 3, 9, 'No pets', 'No pets', 9);

-- GENDER (43), en-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (43, 4, 1, 'Male', 'Male', 1),
  (43, 4, 2, 'Female', 'Female', 2);

-- REGION (100), en-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (100, 4, 1, 'Alberta', 'Alberta', 1),
  (100, 4, 2, 'British Columbia', 'British Columbia', 2),
  (100, 4, 3, 'Manitoba', 'Manitoba', 3),
  (100, 4, 4, 'New Brunswick', 'New Brunswick', 4),
  (100, 4, 5, 'Newfoundland and Labrador', 'Newfoundland and Labrador', 5),
  (100, 4, 6, 'Nova Scotia', 'Nova Scotia', 6),
  (100, 4, 7, 'Ontario', 'Ontario', 7),
  (100, 4, 8, 'Prince Edward Island', 'Prince Edward Island', 8),
  (100, 4, 9, 'Quebec', 'Quebec', 9),
  (100, 4, 10, 'Saskatchewan', 'Saskatchewan', 10),
  (100, 4, 11, 'Northwest Territories', 'Northwest Territories', 11),
  (100, 4, 12, 'Nunavut', 'Nunavut', 12),
  (100, 4, 13, 'Yukon', 'Yukon', 13);

-- HOUSEHOLD_INCOME (101), en-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (101, 4, 1, 'Under $20,000', 'Under $20,000', 1),
  (101, 4, 2, '$20,000 to $39,999', '$20,000 to $39,999', 2),
  (101, 4, 3, '$40,000 to $59,999', '$40,000 to $59,999', 3),
  (101, 4, 4, '$60,000 to $79,999', '$60,000 to $79,999', 4),
  (101, 4, 5, '$80,000 to $99,999', '$80,000 to $99,999', 5),
  (101, 4, 6, '$100,000 to $149,999', '$100,000 to $149,999', 6),
  (101, 4, 7, '$150,000 to $199,999', '$150,000 to $199,999', 7),
  (101, 4, 8, '$200,000 or more', '$200,000 or more', 8),
  (101, 4, 9, 'Prefer not to say', 'Prefer not to say', 9);

-- EDUCATION (102), en-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (102, 4, 1, 'Less than high school', 'Less than high school', 1),
  (102, 4, 2, 'High school diploma or equivalent', 'High school diploma or equivalent', 2),
  (102, 4, 3, 'Trade certificate or apprenticeship', 'Trade certificate or apprenticeship', 3),
  (102, 4, 4, 'Some college or university, no degree', 'Some college or university, no degree', 4),
  (102, 4, 5, 'College or CEGEP diploma', 'College or CEGEP diploma', 5),
  (102, 4, 6, 'Bachelor''s degree', 'Bachelor''s degree', 6),
  (102, 4, 7, 'Master''s degree', 'Master''s degree', 7),
  (102, 4, 8, 'Doctorate or professional degree (e.g. PhD, MD)', 'Doctorate or professional degree (e.g. PhD, MD)', 8),
  (102, 4, 9, 'Prefer not to say', 'Prefer not to say', 9);

-- EMPLOYMENT (103), en-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (103, 4, 1, 'Employed full-time', 'Employed full-time', 1),
  (103, 4, 2, 'Employed part-time', 'Employed part-time', 2),
  (103, 4, 3, 'Self-employed', 'Self-employed', 3),
  (103, 4, 4, 'Unemployed and looking for work', 'Unemployed and looking for work', 4),
  (103, 4, 5, 'Unemployed and not looking for work', 'Unemployed and not looking for work', 5),
  (103, 4, 6, 'Student', 'Student', 6),
  (103, 4, 7, 'Homemaker', 'Homemaker', 7),
  (103, 4, 8, 'Retired', 'Retired', 8),
  (103, 4, 9, 'Unable to work', 'Unable to work', 9),
  (103, 4, 10, 'Prefer not to say', 'Prefer not to say', 10);

-- MARITAL_STATUS (104), en-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (104, 4, 1, 'Single, never married', 'Single, never married', 1),
  (104, 4, 2, 'Married', 'Married', 2),
  (104, 4, 3, 'Living common-law', 'Living common-law', 3),
  (104, 4, 4, 'Separated', 'Separated', 4),
  (104, 4, 5, 'Divorced', 'Divorced', 5),
  (104, 4, 6, 'Widowed', 'Widowed', 6),
  (104, 4, 7, 'Prefer not to say', 'Prefer not to say', 7);

-- PARENTAL_STATUS (105), en-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (105, 4, 1, 'Yes, of at least one child under 18', 'Yes, of at least one child under 18', 1),
  (105, 4, 2, 'Yes, but all my children are 18 or older', 'Yes, but all my children are 18 or older', 2),
  (105, 4, 3, 'No', 'No', 3);

-- CHILDREN (106), en-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (106, 4, 1, 'None', 'None', 1),
  (106, 4, 2, '1', '1', 2),
  (106, 4, 3, '2', '2', 3),
  (106, 4, 4, '3', '3', 4),
  (106, 4, 5, '4 or more', '4 or more', 5);

-- HOUSEHOLD_SIZE (107), en-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (107, 4, 1, '1 (just me)', '1 (just me)', 1),
  (107, 4, 2, '2', '2', 2),
  (107, 4, 3, '3', '3', 3),
  (107, 4, 4, '4', '4', 4),
  (107, 4, 5, '5', '5', 5),
  (107, 4, 6, '6 or more', '6 or more', 6);

-- HOME_OWNERSHIP (108), en-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (108, 4, 1, 'Own outright (no mortgage)', 'Own outright (no mortgage)', 1),
  (108, 4, 2, 'Own with a mortgage', 'Own with a mortgage', 2),
  (108, 4, 3, 'Rent', 'Rent', 3),
  (108, 4, 4, 'Live with parents or family without paying rent', 'Live with parents or family without paying rent', 4),
  (108, 4, 5, 'Other', 'Other', 5);

-- INDUSTRY (109), en-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (109, 4, 1, 'Advertising and marketing', 'Advertising and marketing', 1),
  (109, 4, 2, 'Agriculture, forestry and fishing', 'Agriculture, forestry and fishing', 2),
  (109, 4, 3, 'Automotive', 'Automotive', 3),
  (109, 4, 4, 'Banking and financial services', 'Banking and financial services', 4),
  (109, 4, 5, 'Construction', 'Construction', 5),
  (109, 4, 6, 'Education', 'Education', 6),
  (109, 4, 7, 'Energy and utilities', 'Energy and utilities', 7),
  (109, 4, 8, 'Government and public administration', 'Government and public administration', 8),
  (109, 4, 9, 'Healthcare', 'Healthcare', 9),
  (109, 4, 10, 'Hospitality and tourism', 'Hospitality and tourism', 10),
  (109, 4, 11, 'Information technology', 'Information technology', 11),
  (109, 4, 12, 'Insurance', 'Insurance', 12),
  (109, 4, 13, 'Legal services', 'Legal services', 13),
  (109, 4, 14, 'Manufacturing', 'Manufacturing', 14),
  (109, 4, 15, 'Market research', 'Market research', 15),
  (109, 4, 16, 'Media and entertainment', 'Media and entertainment', 16),
  (109, 4, 17, 'Non-profit', 'Non-profit', 17),
  (109, 4, 18, 'Pharmaceuticals and biotechnology', 'Pharmaceuticals and biotechnology', 18),
  (109, 4, 19, 'Real estate', 'Real estate', 19),
  (109, 4, 20, 'Retail', 'Retail', 20),
  (109, 4, 21, 'Telecommunications', 'Telecommunications', 21),
  (109, 4, 22, 'Transportation and logistics', 'Transportation and logistics', 22),
  (109, 4, 23, 'Other', 'Other', 23),
  (109, 4, 24, 'I am not currently working', 'I am not currently working', 24);

-- DEVICES_OWNED (110), en-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (110, 4, 1, 'Smartphone', 'Smartphone', 1),
  (110, 4, 2, 'Tablet', 'Tablet', 2),
  (110, 4, 3, 'Laptop computer', 'Laptop computer', 3),
  (110, 4, 4, 'Desktop computer', 'Desktop computer', 4),
  (110, 4, 5, 'Smart TV', 'Smart TV', 5),
  (110, 4, 6, 'Streaming device (e.g. Roku, Apple TV, Chromecast)', 'Streaming device (e.g. Roku, Apple TV, Chromecast)', 6),
  (110, 4, 7, 'Video game console', 'Video game console', 7),
  (110, 4, 8, 'Smartwatch or fitness tracker', 'Smartwatch or fitness tracker', 8),
  (110, 4, 9, 'Smart speaker (e.g. Amazon Echo, Google Nest)', 'Smart speaker (e.g. Amazon Echo, Google Nest)', 9),
  (110, 4, 10, 'E-reader', 'E-reader', 10),
  (110, 4, 11, 'Virtual reality headset', 'Virtual reality headset', 11),
  (110, 4, 12, 'None of these', 'None of these', 12);

-- PETS (111), en-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (111, 4, 1, 'Dog', 'Dog', 1),
  (111, 4, 2, 'Cat', 'Cat', 2),
  (111, 4, 3, 'Fish', 'Fish', 3),
  (111, 4, 4, 'Bird', 'Bird', 4),
  (111, 4, 5, 'Small mammal (e.g. rabbit, hamster, guinea pig)', 'Small mammal (e.g. rabbit, hamster, guinea pig)', 5),
  (111, 4, 6, 'Reptile or amphibian', 'Reptile or amphibian', 6),
  (111, 4, 7, 'Horse', 'Horse', 7),
  (111, 4, 8, 'Other pet', 'Other pet', 8),
  (111, 4, 9, 'No pets', 'No pets', 9);

-- GENDER (43), fr-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (43, 5, 1, 'Homme', 'Male', 1),
  (43, 5, 2, 'Femme', 'Female', 2);

-- REGION (100), fr-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (100, 5, 1, 'Alberta', 'Alberta', 1),
  (100, 5, 2, 'Colombie-Britannique', 'British Columbia', 2),
  (100, 5, 3, 'Manitoba', 'Manitoba', 3),
  (100, 5, 4, 'Nouveau-Brunswick', 'New Brunswick', 4),
  (100, 5, 5, 'Terre-Neuve-et-Labrador', 'Newfoundland and Labrador', 5),
  (100, 5, 6, 'Nouvelle-Écosse', 'Nova Scotia', 6),
  (100, 5, 7, 'Ontario', 'Ontario', 7),
  (100, 5, 8, 'Île-du-Prince-Édouard', 'Prince Edward Island', 8),
  (100, 5, 9, 'Québec', 'Quebec', 9),
  (100, 5, 10, 'Saskatchewan', 'Saskatchewan', 10),
  (100, 5, 11, 'Territoires du Nord-Ouest', 'Northwest Territories', 11),
  (100, 5, 12, 'Nunavut', 'Nunavut', 12),
  (100, 5, 13, 'Yukon', 'Yukon', 13);

-- HOUSEHOLD_INCOME (101), fr-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (101, 5, 1, 'Moins de 20 000 $', 'Under $20,000', 1),
  (101, 5, 2, 'De 20 000 $ à 39 999 $', '$20,000 to $39,999', 2),
  (101, 5, 3, 'De 40 000 $ à 59 999 $', '$40,000 to $59,999', 3),
  (101, 5, 4, 'De 60 000 $ à 79 999 $', '$60,000 to $79,999', 4),
  (101, 5, 5, 'De 80 000 $ à 99 999 $', '$80,000 to $99,999', 5),
  (101, 5, 6, 'De 100 000 $ à 149 999 $', '$100,000 to $149,999', 6),
  (101, 5, 7, 'De 150 000 $ à 199 999 $', '$150,000 to $199,999', 7),
  (101, 5, 8, '200 000 $ ou plus', '$200,000 or more', 8),
  (101, 5, 9, 'Je préfère ne pas répondre', 'Prefer not to say', 9);

-- EDUCATION (102), fr-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (102, 5, 1, 'Études secondaires non terminées', 'Less than high school', 1),
  (102, 5, 2, 'Diplôme d''études secondaires ou l''équivalent', 'High school diploma or equivalent', 2),
  (102, 5, 3, 'Diplôme d''études professionnelles (DEP) ou certificat d''apprentissage', 'Trade certificate or apprenticeship', 3),
  (102, 5, 4, 'Études collégiales ou universitaires partielles, sans diplôme', 'Some college or university, no degree', 4),
  (102, 5, 5, 'Diplôme d''études collégiales (DEC)', 'College or CEGEP diploma', 5),
  (102, 5, 6, 'Baccalauréat universitaire', 'Bachelor''s degree', 6),
  (102, 5, 7, 'Maîtrise', 'Master''s degree', 7),
  (102, 5, 8, 'Doctorat ou diplôme professionnel (p. ex. Ph. D., médecine)', 'Doctorate or professional degree (e.g. PhD, MD)', 8),
  (102, 5, 9, 'Je préfère ne pas répondre', 'Prefer not to say', 9);

-- EMPLOYMENT (103), fr-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (103, 5, 1, 'Employé(e) à temps plein', 'Employed full-time', 1),
  (103, 5, 2, 'Employé(e) à temps partiel', 'Employed part-time', 2),
  (103, 5, 3, 'Travailleur(euse) autonome', 'Self-employed', 3),
  (103, 5, 4, 'Sans emploi, à la recherche d''un emploi', 'Unemployed and looking for work', 4),
  (103, 5, 5, 'Sans emploi, sans recherche d''emploi', 'Unemployed and not looking for work', 5),
  (103, 5, 6, 'Étudiant(e)', 'Student', 6),
  (103, 5, 7, 'Personne au foyer', 'Homemaker', 7),
  (103, 5, 8, 'Retraité(e)', 'Retired', 8),
  (103, 5, 9, 'Dans l''incapacité de travailler', 'Unable to work', 9),
  (103, 5, 10, 'Je préfère ne pas répondre', 'Prefer not to say', 10);

-- MARITAL_STATUS (104), fr-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (104, 5, 1, 'Célibataire', 'Single, never married', 1),
  (104, 5, 2, 'Marié(e)', 'Married', 2),
  (104, 5, 3, 'Conjoint(e) de fait', 'Living common-law', 3),
  (104, 5, 4, 'Séparé(e)', 'Separated', 4),
  (104, 5, 5, 'Divorcé(e)', 'Divorced', 5),
  (104, 5, 6, 'Veuf ou veuve', 'Widowed', 6),
  (104, 5, 7, 'Je préfère ne pas répondre', 'Prefer not to say', 7);

-- PARENTAL_STATUS (105), fr-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (105, 5, 1, 'Oui, d''au moins un enfant de moins de 18 ans', 'Yes, of at least one child under 18', 1),
  (105, 5, 2, 'Oui, mais tous mes enfants ont 18 ans ou plus', 'Yes, but all my children are 18 or older', 2),
  (105, 5, 3, 'Non', 'No', 3);

-- CHILDREN (106), fr-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (106, 5, 1, 'Aucun', 'None', 1),
  (106, 5, 2, '1', '1', 2),
  (106, 5, 3, '2', '2', 3),
  (106, 5, 4, '3', '3', 4),
  (106, 5, 5, '4 ou plus', '4 or more', 5);

-- HOUSEHOLD_SIZE (107), fr-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (107, 5, 1, '1 (moi seul(e))', '1 (just me)', 1),
  (107, 5, 2, '2', '2', 2),
  (107, 5, 3, '3', '3', 3),
  (107, 5, 4, '4', '4', 4),
  (107, 5, 5, '5', '5', 5),
  (107, 5, 6, '6 ou plus', '6 or more', 6);

-- HOME_OWNERSHIP (108), fr-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (108, 5, 1, 'Propriétaire, sans hypothèque', 'Own outright (no mortgage)', 1),
  (108, 5, 2, 'Propriétaire, avec hypothèque', 'Own with a mortgage', 2),
  (108, 5, 3, 'Locataire', 'Rent', 3),
  (108, 5, 4, 'Logé(e) gratuitement chez mes parents ou de la famille', 'Live with parents or family without paying rent', 4),
  (108, 5, 5, 'Autre', 'Other', 5);

-- INDUSTRY (109), fr-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (109, 5, 1, 'Publicité et marketing', 'Advertising and marketing', 1),
  (109, 5, 2, 'Agriculture, sylviculture et pêche', 'Agriculture, forestry and fishing', 2),
  (109, 5, 3, 'Automobile', 'Automotive', 3),
  (109, 5, 4, 'Banque et services financiers', 'Banking and financial services', 4),
  (109, 5, 5, 'Construction', 'Construction', 5),
  (109, 5, 6, 'Enseignement et éducation', 'Education', 6),
  (109, 5, 7, 'Énergie et services publics', 'Energy and utilities', 7),
  (109, 5, 8, 'Administration publique', 'Government and public administration', 8),
  (109, 5, 9, 'Santé', 'Healthcare', 9),
  (109, 5, 10, 'Hôtellerie, restauration et tourisme', 'Hospitality and tourism', 10),
  (109, 5, 11, 'Informatique et technologies de l''information', 'Information technology', 11),
  (109, 5, 12, 'Assurance', 'Insurance', 12),
  (109, 5, 13, 'Services juridiques', 'Legal services', 13),
  (109, 5, 14, 'Industrie manufacturière', 'Manufacturing', 14),
  (109, 5, 15, 'Études de marché', 'Market research', 15),
  (109, 5, 16, 'Médias et divertissement', 'Media and entertainment', 16),
  (109, 5, 17, 'Organismes sans but lucratif', 'Non-profit', 17),
  (109, 5, 18, 'Industrie pharmaceutique et biotechnologies', 'Pharmaceuticals and biotechnology', 18),
  (109, 5, 19, 'Immobilier', 'Real estate', 19),
  (109, 5, 20, 'Commerce de détail', 'Retail', 20),
  (109, 5, 21, 'Télécommunications', 'Telecommunications', 21),
  (109, 5, 22, 'Transport et logistique', 'Transportation and logistics', 22),
  (109, 5, 23, 'Autre', 'Other', 23),
  (109, 5, 24, 'Je ne travaille pas actuellement', 'I am not currently working', 24);

-- DEVICES_OWNED (110), fr-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (110, 5, 1, 'Téléphone intelligent', 'Smartphone', 1),
  (110, 5, 2, 'Tablette', 'Tablet', 2),
  (110, 5, 3, 'Ordinateur portable', 'Laptop computer', 3),
  (110, 5, 4, 'Ordinateur de bureau', 'Desktop computer', 4),
  (110, 5, 5, 'Téléviseur intelligent', 'Smart TV', 5),
  (110, 5, 6, 'Appareil de diffusion en continu (p. ex. Roku, Apple TV, Chromecast)', 'Streaming device (e.g. Roku, Apple TV, Chromecast)', 6),
  (110, 5, 7, 'Console de jeux vidéo', 'Video game console', 7),
  (110, 5, 8, 'Montre intelligente ou moniteur d''activité physique', 'Smartwatch or fitness tracker', 8),
  (110, 5, 9, 'Haut-parleur intelligent (p. ex. Amazon Echo, Google Nest)', 'Smart speaker (e.g. Amazon Echo, Google Nest)', 9),
  (110, 5, 10, 'Liseuse', 'E-reader', 10),
  (110, 5, 11, 'Casque de réalité virtuelle', 'Virtual reality headset', 11),
  (110, 5, 12, 'Aucun de ces appareils', 'None of these', 12);

-- PETS (111), fr-CA
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (111, 5, 1, 'Chien', 'Dog', 1),
  (111, 5, 2, 'Chat', 'Cat', 2),
  (111, 5, 3, 'Poissons', 'Fish', 3),
  (111, 5, 4, 'Oiseau', 'Bird', 4),
  (111, 5, 5, 'Petit mammifère (p. ex. lapin, hamster, cochon d''Inde)', 'Small mammal (e.g. rabbit, hamster, guinea pig)', 5),
  (111, 5, 6, 'Reptile ou amphibien', 'Reptile or amphibian', 6),
  (111, 5, 7, 'Cheval', 'Horse', 7),
  (111, 5, 8, 'Autre animal', 'Other pet', 8),
  (111, 5, 9, 'Aucun animal', 'No pets', 9);

-- GENDER (43), de-DE
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (43, 6, 1, 'Männlich', 'Male', 1),
  (43, 6, 2, 'Weiblich', 'Female', 2);

-- REGION (100), de-DE
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (100, 6, 1, 'Baden-Württemberg', 'Baden-Württemberg', 1),
  (100, 6, 2, 'Bayern', 'Bavaria', 2),
  (100, 6, 3, 'Berlin', 'Berlin', 3),
  (100, 6, 4, 'Brandenburg', 'Brandenburg', 4),
  (100, 6, 5, 'Bremen', 'Bremen', 5),
  (100, 6, 6, 'Hamburg', 'Hamburg', 6),
  (100, 6, 7, 'Hessen', 'Hesse', 7),
  (100, 6, 8, 'Mecklenburg-Vorpommern', 'Mecklenburg-Western Pomerania', 8),
  (100, 6, 9, 'Niedersachsen', 'Lower Saxony', 9),
  (100, 6, 10, 'Nordrhein-Westfalen', 'North Rhine-Westphalia', 10),
  (100, 6, 11, 'Rheinland-Pfalz', 'Rhineland-Palatinate', 11),
  (100, 6, 12, 'Saarland', 'Saarland', 12),
  (100, 6, 13, 'Sachsen', 'Saxony', 13),
  (100, 6, 14, 'Sachsen-Anhalt', 'Saxony-Anhalt', 14),
  (100, 6, 15, 'Schleswig-Holstein', 'Schleswig-Holstein', 15),
  (100, 6, 16, 'Thüringen', 'Thuringia', 16);

-- HOUSEHOLD_INCOME (101), de-DE
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (101, 6, 1, 'Unter 10.000 €', 'Under €10,000', 1),
  (101, 6, 2, '10.000 € bis 19.999 €', '€10,000 to €19,999', 2),
  (101, 6, 3, '20.000 € bis 29.999 €', '€20,000 to €29,999', 3),
  (101, 6, 4, '30.000 € bis 39.999 €', '€30,000 to €39,999', 4),
  (101, 6, 5, '40.000 € bis 49.999 €', '€40,000 to €49,999', 5),
  (101, 6, 6, '50.000 € bis 59.999 €', '€50,000 to €59,999', 6),
  (101, 6, 7, '60.000 € bis 79.999 €', '€60,000 to €79,999', 7),
  (101, 6, 8, '80.000 € bis 99.999 €', '€80,000 to €99,999', 8),
  (101, 6, 9, '100.000 € bis 149.999 €', '€100,000 to €149,999', 9),
  (101, 6, 10, '150.000 € oder mehr', '€150,000 or more', 10),
  (101, 6, 11, 'Keine Angabe', 'Prefer not to say', 11);

-- EDUCATION (102), de-DE
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (102, 6, 1, 'Ohne Schulabschluss', 'Did not complete secondary school', 1),
  (102, 6, 2, 'Haupt- oder Realschulabschluss, Abitur', 'Secondary school diploma or equivalent', 2),
  (102, 6, 3, 'Abgeschlossene Berufsausbildung (Lehre)', 'Vocational or technical qualification', 3),
  (102, 6, 4, 'Studium ohne Abschluss', 'Some college or university, no degree', 4),
  (102, 6, 5, 'Meister-, Techniker- oder Fachschulabschluss', 'Associate degree or two-year college diploma', 5),
  (102, 6, 6, 'Bachelor oder gleichwertiger Abschluss', 'Bachelor''s degree', 6),
  (102, 6, 7, 'Master, Diplom, Magister oder Staatsexamen', 'Master''s degree', 7),
  (102, 6, 8, 'Promotion', 'Doctorate or professional degree', 8),
  (102, 6, 9, 'Keine Angabe', 'Prefer not to say', 9);

-- EMPLOYMENT (103), de-DE
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (103, 6, 1, 'Vollzeit angestellt', 'Employed full-time', 1),
  (103, 6, 2, 'Teilzeit angestellt', 'Employed part-time', 2),
  (103, 6, 3, 'Selbstständig', 'Self-employed', 3),
  (103, 6, 4, 'Arbeitslos und auf Arbeitssuche', 'Unemployed and looking for work', 4),
  (103, 6, 5, 'Arbeitslos und nicht auf Arbeitssuche', 'Unemployed and not looking for work', 5),
  (103, 6, 6, 'Schüler/in oder Student/in', 'Student', 6),
  (103, 6, 7, 'Hausfrau/Hausmann', 'Homemaker', 7),
  (103, 6, 8, 'Im Ruhestand', 'Retired', 8),
  (103, 6, 9, 'Erwerbsunfähig', 'Unable to work', 9),
  (103, 6, 10, 'Keine Angabe', 'Prefer not to say', 10);

-- MARITAL_STATUS (104), de-DE
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (104, 6, 1, 'Ledig', 'Single, never married', 1),
  (104, 6, 2, 'Verheiratet oder in eingetragener Lebenspartnerschaft', 'Married', 2),
  (104, 6, 3, 'Unverheiratet mit Partner/in zusammenlebend', 'Living with a partner', 3),
  (104, 6, 4, 'Getrennt lebend', 'Separated', 4),
  (104, 6, 5, 'Geschieden', 'Divorced', 5),
  (104, 6, 6, 'Verwitwet', 'Widowed', 6),
  (104, 6, 7, 'Keine Angabe', 'Prefer not to say', 7);

-- PARENTAL_STATUS (105), de-DE
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (105, 6, 1, 'Ja, von mindestens einem Kind unter 18 Jahren', 'Yes, of at least one child under 18', 1),
  (105, 6, 2, 'Ja, aber alle meine Kinder sind 18 Jahre oder älter', 'Yes, but all my children are 18 or older', 2),
  (105, 6, 3, 'Nein', 'No', 3);

-- CHILDREN (106), de-DE
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (106, 6, 1, 'Keine', 'None', 1),
  (106, 6, 2, '1', '1', 2),
  (106, 6, 3, '2', '2', 3),
  (106, 6, 4, '3', '3', 4),
  (106, 6, 5, '4 oder mehr', '4 or more', 5);

-- HOUSEHOLD_SIZE (107), de-DE
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (107, 6, 1, '1 (nur ich)', '1 (just me)', 1),
  (107, 6, 2, '2', '2', 2),
  (107, 6, 3, '3', '3', 3),
  (107, 6, 4, '4', '4', 4),
  (107, 6, 5, '5', '5', 5),
  (107, 6, 6, '6 oder mehr', '6 or more', 6);

-- HOME_OWNERSHIP (108), de-DE
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (108, 6, 1, 'Eigentum, ohne laufenden Kredit', 'Own outright (no mortgage)', 1),
  (108, 6, 2, 'Eigentum, mit laufendem Immobilienkredit', 'Own with a mortgage', 2),
  (108, 6, 3, 'Zur Miete', 'Rent', 3),
  (108, 6, 4, 'Bei Eltern oder Verwandten, ohne Miete zu zahlen', 'Live with parents or family without paying rent', 4),
  (108, 6, 5, 'Sonstiges', 'Other', 5);

-- INDUSTRY (109), de-DE
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (109, 6, 1, 'Werbung und Marketing', 'Advertising and marketing', 1),
  (109, 6, 2, 'Land- und Forstwirtschaft, Fischerei', 'Agriculture, forestry and fishing', 2),
  (109, 6, 3, 'Automobilindustrie', 'Automotive', 3),
  (109, 6, 4, 'Banken und Finanzdienstleistungen', 'Banking and financial services', 4),
  (109, 6, 5, 'Baugewerbe', 'Construction', 5),
  (109, 6, 6, 'Bildung und Erziehung', 'Education', 6),
  (109, 6, 7, 'Energie- und Wasserversorgung', 'Energy and utilities', 7),
  (109, 6, 8, 'Öffentliche Verwaltung', 'Government and public administration', 8),
  (109, 6, 9, 'Gesundheitswesen', 'Healthcare', 9),
  (109, 6, 10, 'Gastgewerbe und Tourismus', 'Hospitality and tourism', 10),
  (109, 6, 11, 'Informationstechnologie (IT)', 'Information technology', 11),
  (109, 6, 12, 'Versicherungen', 'Insurance', 12),
  (109, 6, 13, 'Rechtswesen', 'Legal services', 13),
  (109, 6, 14, 'Verarbeitendes Gewerbe und Produktion', 'Manufacturing', 14),
  (109, 6, 15, 'Marktforschung', 'Market research', 15),
  (109, 6, 16, 'Medien und Unterhaltung', 'Media and entertainment', 16),
  (109, 6, 17, 'Gemeinnützige Organisationen', 'Non-profit', 17),
  (109, 6, 18, 'Pharma und Biotechnologie', 'Pharmaceuticals and biotechnology', 18),
  (109, 6, 19, 'Immobilien', 'Real estate', 19),
  (109, 6, 20, 'Einzelhandel', 'Retail', 20),
  (109, 6, 21, 'Telekommunikation', 'Telecommunications', 21),
  (109, 6, 22, 'Transport und Logistik', 'Transportation and logistics', 22),
  (109, 6, 23, 'Sonstige', 'Other', 23),
  (109, 6, 24, 'Ich bin derzeit nicht berufstätig', 'I am not currently working', 24);

-- DEVICES_OWNED (110), de-DE
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (110, 6, 1, 'Smartphone', 'Smartphone', 1),
  (110, 6, 2, 'Tablet', 'Tablet', 2),
  (110, 6, 3, 'Laptop', 'Laptop computer', 3),
  (110, 6, 4, 'Desktop-PC', 'Desktop computer', 4),
  (110, 6, 5, 'Smart-TV', 'Smart TV', 5),
  (110, 6, 6, 'Streaming-Gerät (z. B. Fire TV Stick, Apple TV, Chromecast)', 'Streaming device (e.g. Roku, Apple TV, Chromecast)', 6),
  (110, 6, 7, 'Spielkonsole', 'Video game console', 7),
  (110, 6, 8, 'Smartwatch oder Fitness-Tracker', 'Smartwatch or fitness tracker', 8),
  (110, 6, 9, 'Smart Speaker (z. B. Amazon Echo, Google Nest)', 'Smart speaker (e.g. Amazon Echo, Google Nest)', 9),
  (110, 6, 10, 'E-Reader', 'E-reader', 10),
  (110, 6, 11, 'VR-Brille', 'Virtual reality headset', 11),
  (110, 6, 12, 'Keines davon', 'None of these', 12);

-- PETS (111), de-DE
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (111, 6, 1, 'Hund', 'Dog', 1),
  (111, 6, 2, 'Katze', 'Cat', 2),
  (111, 6, 3, 'Fische', 'Fish', 3),
  (111, 6, 4, 'Vogel', 'Bird', 4),
  (111, 6, 5, 'Kleintier (z. B. Kaninchen, Hamster, Meerschweinchen)', 'Small mammal (e.g. rabbit, hamster, guinea pig)', 5),
  (111, 6, 6, 'Reptil oder Amphibie', 'Reptile or amphibian', 6),
  (111, 6, 7, 'Pferd', 'Horse', 7),
  (111, 6, 8, 'Anderes Haustier', 'Other pet', 8),
  (111, 6, 9, 'Keine Haustiere', 'No pets', 9);

-- GENDER (43), fr-FR
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (43, 7, 1, 'Homme', 'Male', 1),
  (43, 7, 2, 'Femme', 'Female', 2);

-- REGION (100), fr-FR
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (100, 7, 1, 'Auvergne-Rhône-Alpes', 'Auvergne-Rhône-Alpes', 1),
  (100, 7, 2, 'Bourgogne-Franche-Comté', 'Bourgogne-Franche-Comté', 2),
  (100, 7, 3, 'Bretagne', 'Brittany', 3),
  (100, 7, 4, 'Centre-Val de Loire', 'Centre-Val de Loire', 4),
  (100, 7, 5, 'Corse', 'Corsica', 5),
  (100, 7, 6, 'Grand Est', 'Grand Est', 6),
  (100, 7, 7, 'Hauts-de-France', 'Hauts-de-France', 7),
  (100, 7, 8, 'Île-de-France', 'Île-de-France', 8),
  (100, 7, 9, 'Normandie', 'Normandy', 9),
  (100, 7, 10, 'Nouvelle-Aquitaine', 'Nouvelle-Aquitaine', 10),
  (100, 7, 11, 'Occitanie', 'Occitanie', 11),
  (100, 7, 12, 'Pays de la Loire', 'Pays de la Loire', 12),
  (100, 7, 13, 'Provence-Alpes-Côte d''Azur', 'Provence-Alpes-Côte d''Azur', 13),
  (100, 7, 14, 'Guadeloupe', 'Guadeloupe', 14),
  (100, 7, 15, 'Martinique', 'Martinique', 15),
  (100, 7, 16, 'Guyane', 'French Guiana', 16),
  (100, 7, 17, 'La Réunion', 'Réunion', 17),
  (100, 7, 18, 'Mayotte', 'Mayotte', 18);

-- HOUSEHOLD_INCOME (101), fr-FR
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (101, 7, 1, 'Moins de 10 000 €', 'Under €10,000', 1),
  (101, 7, 2, 'De 10 000 € à 19 999 €', '€10,000 to €19,999', 2),
  (101, 7, 3, 'De 20 000 € à 29 999 €', '€20,000 to €29,999', 3),
  (101, 7, 4, 'De 30 000 € à 39 999 €', '€30,000 to €39,999', 4),
  (101, 7, 5, 'De 40 000 € à 49 999 €', '€40,000 to €49,999', 5),
  (101, 7, 6, 'De 50 000 € à 59 999 €', '€50,000 to €59,999', 6),
  (101, 7, 7, 'De 60 000 € à 79 999 €', '€60,000 to €79,999', 7),
  (101, 7, 8, 'De 80 000 € à 99 999 €', '€80,000 to €99,999', 8),
  (101, 7, 9, 'De 100 000 € à 149 999 €', '€100,000 to €149,999', 9),
  (101, 7, 10, '150 000 € ou plus', '€150,000 or more', 10),
  (101, 7, 11, 'Je préfère ne pas répondre', 'Prefer not to say', 11);

-- EDUCATION (102), fr-FR
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (102, 7, 1, 'Aucun diplôme ou brevet des collèges', 'Did not complete secondary school', 1),
  (102, 7, 2, 'Baccalauréat ou équivalent', 'Secondary school diploma or equivalent', 2),
  (102, 7, 3, 'CAP, BEP ou autre diplôme professionnel', 'Vocational or technical qualification', 3),
  (102, 7, 4, 'Études supérieures sans diplôme', 'Some college or university, no degree', 4),
  (102, 7, 5, 'Bac+2 (BTS, BUT, DUT, DEUG)', 'Associate degree or two-year college diploma', 5),
  (102, 7, 6, 'Licence ou bachelor (Bac+3)', 'Bachelor''s degree', 6),
  (102, 7, 7, 'Master, diplôme d''ingénieur ou de grande école (Bac+5)', 'Master''s degree', 7),
  (102, 7, 8, 'Doctorat', 'Doctorate or professional degree', 8),
  (102, 7, 9, 'Je préfère ne pas répondre', 'Prefer not to say', 9);

-- EMPLOYMENT (103), fr-FR
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (103, 7, 1, 'Salarié(e) à temps plein', 'Employed full-time', 1),
  (103, 7, 2, 'Salarié(e) à temps partiel', 'Employed part-time', 2),
  (103, 7, 3, 'Indépendant(e) ou à mon compte', 'Self-employed', 3),
  (103, 7, 4, 'Sans emploi, à la recherche d''un emploi', 'Unemployed and looking for work', 4),
  (103, 7, 5, 'Sans emploi, sans recherche d''emploi', 'Unemployed and not looking for work', 5),
  (103, 7, 6, 'Étudiant(e)', 'Student', 6),
  (103, 7, 7, 'Au foyer', 'Homemaker', 7),
  (103, 7, 8, 'Retraité(e)', 'Retired', 8),
  (103, 7, 9, 'Dans l''incapacité de travailler', 'Unable to work', 9),
  (103, 7, 10, 'Je préfère ne pas répondre', 'Prefer not to say', 10);

-- MARITAL_STATUS (104), fr-FR
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (104, 7, 1, 'Célibataire', 'Single, never married', 1),
  (104, 7, 2, 'Marié(e) ou pacsé(e)', 'Married', 2),
  (104, 7, 3, 'En couple, en union libre', 'Living with a partner', 3),
  (104, 7, 4, 'Séparé(e)', 'Separated', 4),
  (104, 7, 5, 'Divorcé(e)', 'Divorced', 5),
  (104, 7, 6, 'Veuf ou veuve', 'Widowed', 6),
  (104, 7, 7, 'Je préfère ne pas répondre', 'Prefer not to say', 7);

-- PARENTAL_STATUS (105), fr-FR
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (105, 7, 1, 'Oui, d''au moins un enfant de moins de 18 ans', 'Yes, of at least one child under 18', 1),
  (105, 7, 2, 'Oui, mais tous mes enfants ont 18 ans ou plus', 'Yes, but all my children are 18 or older', 2),
  (105, 7, 3, 'Non', 'No', 3);

-- CHILDREN (106), fr-FR
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (106, 7, 1, 'Aucun', 'None', 1),
  (106, 7, 2, '1', '1', 2),
  (106, 7, 3, '2', '2', 3),
  (106, 7, 4, '3', '3', 4),
  (106, 7, 5, '4 ou plus', '4 or more', 5);

-- HOUSEHOLD_SIZE (107), fr-FR
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (107, 7, 1, '1 (moi seul(e))', '1 (just me)', 1),
  (107, 7, 2, '2', '2', 2),
  (107, 7, 3, '3', '3', 3),
  (107, 7, 4, '4', '4', 4),
  (107, 7, 5, '5', '5', 5),
  (107, 7, 6, '6 ou plus', '6 or more', 6);

-- HOME_OWNERSHIP (108), fr-FR
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (108, 7, 1, 'Propriétaire, sans emprunt en cours', 'Own outright (no mortgage)', 1),
  (108, 7, 2, 'Propriétaire, avec un emprunt immobilier en cours', 'Own with a mortgage', 2),
  (108, 7, 3, 'Locataire', 'Rent', 3),
  (108, 7, 4, 'Logé(e) gratuitement chez mes parents ou de la famille', 'Live with parents or family without paying rent', 4),
  (108, 7, 5, 'Autre', 'Other', 5);

-- INDUSTRY (109), fr-FR
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (109, 7, 1, 'Publicité et marketing', 'Advertising and marketing', 1),
  (109, 7, 2, 'Agriculture, sylviculture et pêche', 'Agriculture, forestry and fishing', 2),
  (109, 7, 3, 'Automobile', 'Automotive', 3),
  (109, 7, 4, 'Banque et services financiers', 'Banking and financial services', 4),
  (109, 7, 5, 'Bâtiment et travaux publics (BTP)', 'Construction', 5),
  (109, 7, 6, 'Enseignement et éducation', 'Education', 6),
  (109, 7, 7, 'Énergie et services publics', 'Energy and utilities', 7),
  (109, 7, 8, 'Administration publique', 'Government and public administration', 8),
  (109, 7, 9, 'Santé', 'Healthcare', 9),
  (109, 7, 10, 'Hôtellerie, restauration et tourisme', 'Hospitality and tourism', 10),
  (109, 7, 11, 'Informatique et technologies de l''information', 'Information technology', 11),
  (109, 7, 12, 'Assurance', 'Insurance', 12),
  (109, 7, 13, 'Services juridiques', 'Legal services', 13),
  (109, 7, 14, 'Industrie manufacturière', 'Manufacturing', 14),
  (109, 7, 15, 'Études de marché', 'Market research', 15),
  (109, 7, 16, 'Médias et divertissement', 'Media and entertainment', 16),
  (109, 7, 17, 'Associations et organisations à but non lucratif', 'Non-profit', 17),
  (109, 7, 18, 'Industrie pharmaceutique et biotechnologies', 'Pharmaceuticals and biotechnology', 18),
  (109, 7, 19, 'Immobilier', 'Real estate', 19),
  (109, 7, 20, 'Commerce de détail', 'Retail', 20),
  (109, 7, 21, 'Télécommunications', 'Telecommunications', 21),
  (109, 7, 22, 'Transport et logistique', 'Transportation and logistics', 22),
  (109, 7, 23, 'Autre', 'Other', 23),
  (109, 7, 24, 'Je ne travaille pas actuellement', 'I am not currently working', 24);

-- DEVICES_OWNED (110), fr-FR
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (110, 7, 1, 'Smartphone', 'Smartphone', 1),
  (110, 7, 2, 'Tablette', 'Tablet', 2),
  (110, 7, 3, 'Ordinateur portable', 'Laptop computer', 3),
  (110, 7, 4, 'Ordinateur de bureau', 'Desktop computer', 4),
  (110, 7, 5, 'Téléviseur connecté', 'Smart TV', 5),
  (110, 7, 6, 'Boîtier ou clé de streaming (par ex. Apple TV, Chromecast)', 'Streaming device (e.g. Roku, Apple TV, Chromecast)', 6),
  (110, 7, 7, 'Console de jeux vidéo', 'Video game console', 7),
  (110, 7, 8, 'Montre connectée ou bracelet d''activité', 'Smartwatch or fitness tracker', 8),
  (110, 7, 9, 'Enceinte connectée (par ex. Amazon Echo, Google Nest)', 'Smart speaker (e.g. Amazon Echo, Google Nest)', 9),
  (110, 7, 10, 'Liseuse', 'E-reader', 10),
  (110, 7, 11, 'Casque de réalité virtuelle', 'Virtual reality headset', 11),
  (110, 7, 12, 'Aucun de ces appareils', 'None of these', 12);

-- PETS (111), fr-FR
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (111, 7, 1, 'Chien', 'Dog', 1),
  (111, 7, 2, 'Chat', 'Cat', 2),
  (111, 7, 3, 'Poissons', 'Fish', 3),
  (111, 7, 4, 'Oiseau', 'Bird', 4),
  (111, 7, 5, 'Petit mammifère (par ex. lapin, hamster, cochon d''Inde)', 'Small mammal (e.g. rabbit, hamster, guinea pig)', 5),
  (111, 7, 6, 'Reptile ou amphibien', 'Reptile or amphibian', 6),
  (111, 7, 7, 'Cheval', 'Horse', 7),
  (111, 7, 8, 'Autre animal', 'Other pet', 8),
  (111, 7, 9, 'Aucun animal', 'No pets', 9);

-- GENDER (43), en-AU
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (43, 8, 1, 'Male', 'Male', 1),
  (43, 8, 2, 'Female', 'Female', 2);

-- REGION (100), en-AU
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (100, 8, 1, 'New South Wales', 'New South Wales', 1),
  (100, 8, 2, 'Victoria', 'Victoria', 2),
  (100, 8, 3, 'Queensland', 'Queensland', 3),
  (100, 8, 4, 'Western Australia', 'Western Australia', 4),
  (100, 8, 5, 'South Australia', 'South Australia', 5),
  (100, 8, 6, 'Tasmania', 'Tasmania', 6),
  (100, 8, 7, 'Australian Capital Territory', 'Australian Capital Territory', 7),
  (100, 8, 8, 'Northern Territory', 'Northern Territory', 8);

-- HOUSEHOLD_INCOME (101), en-AU
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (101, 8, 1, 'Under $20,000', 'Under $20,000', 1),
  (101, 8, 2, '$20,000 to $39,999', '$20,000 to $39,999', 2),
  (101, 8, 3, '$40,000 to $59,999', '$40,000 to $59,999', 3),
  (101, 8, 4, '$60,000 to $79,999', '$60,000 to $79,999', 4),
  (101, 8, 5, '$80,000 to $99,999', '$80,000 to $99,999', 5),
  (101, 8, 6, '$100,000 to $149,999', '$100,000 to $149,999', 6),
  (101, 8, 7, '$150,000 to $199,999', '$150,000 to $199,999', 7),
  (101, 8, 8, '$200,000 to $249,999', '$200,000 to $249,999', 8),
  (101, 8, 9, '$250,000 or more', '$250,000 or more', 9),
  (101, 8, 10, 'Prefer not to say', 'Prefer not to say', 10);

-- EDUCATION (102), en-AU
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (102, 8, 1, 'Year 11 or below', 'Year 11 or below', 1),
  (102, 8, 2, 'Year 12 or equivalent', 'Year 12 or equivalent', 2),
  (102, 8, 3, 'Certificate III/IV or trade qualification', 'Certificate III/IV or trade qualification', 3),
  (102, 8, 4, 'Some university, no degree', 'Some university, no degree', 4),
  (102, 8, 5, 'Diploma or advanced diploma', 'Diploma or advanced diploma', 5),
  (102, 8, 6, 'Bachelor''s degree', 'Bachelor''s degree', 6),
  (102, 8, 7, 'Master''s degree', 'Master''s degree', 7),
  (102, 8, 8, 'Doctorate (e.g. PhD)', 'Doctorate (e.g. PhD)', 8),
  (102, 8, 9, 'Prefer not to say', 'Prefer not to say', 9);

-- EMPLOYMENT (103), en-AU
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (103, 8, 1, 'Employed full-time', 'Employed full-time', 1),
  (103, 8, 2, 'Employed part-time', 'Employed part-time', 2),
  (103, 8, 3, 'Self-employed', 'Self-employed', 3),
  (103, 8, 4, 'Unemployed and looking for work', 'Unemployed and looking for work', 4),
  (103, 8, 5, 'Unemployed and not looking for work', 'Unemployed and not looking for work', 5),
  (103, 8, 6, 'Student', 'Student', 6),
  (103, 8, 7, 'Homemaker', 'Homemaker', 7),
  (103, 8, 8, 'Retired', 'Retired', 8),
  (103, 8, 9, 'Unable to work', 'Unable to work', 9),
  (103, 8, 10, 'Prefer not to say', 'Prefer not to say', 10);

-- MARITAL_STATUS (104), en-AU
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (104, 8, 1, 'Single, never married', 'Single, never married', 1),
  (104, 8, 2, 'Married', 'Married', 2),
  (104, 8, 3, 'In a de facto relationship', 'In a de facto relationship', 3),
  (104, 8, 4, 'Separated', 'Separated', 4),
  (104, 8, 5, 'Divorced', 'Divorced', 5),
  (104, 8, 6, 'Widowed', 'Widowed', 6),
  (104, 8, 7, 'Prefer not to say', 'Prefer not to say', 7);

-- PARENTAL_STATUS (105), en-AU
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (105, 8, 1, 'Yes, of at least one child under 18', 'Yes, of at least one child under 18', 1),
  (105, 8, 2, 'Yes, but all my children are 18 or older', 'Yes, but all my children are 18 or older', 2),
  (105, 8, 3, 'No', 'No', 3);

-- CHILDREN (106), en-AU
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (106, 8, 1, 'None', 'None', 1),
  (106, 8, 2, '1', '1', 2),
  (106, 8, 3, '2', '2', 3),
  (106, 8, 4, '3', '3', 4),
  (106, 8, 5, '4 or more', '4 or more', 5);

-- HOUSEHOLD_SIZE (107), en-AU
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (107, 8, 1, '1 (just me)', '1 (just me)', 1),
  (107, 8, 2, '2', '2', 2),
  (107, 8, 3, '3', '3', 3),
  (107, 8, 4, '4', '4', 4),
  (107, 8, 5, '5', '5', 5),
  (107, 8, 6, '6 or more', '6 or more', 6);

-- HOME_OWNERSHIP (108), en-AU
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (108, 8, 1, 'Own outright (no mortgage)', 'Own outright (no mortgage)', 1),
  (108, 8, 2, 'Own with a mortgage', 'Own with a mortgage', 2),
  (108, 8, 3, 'Rent', 'Rent', 3),
  (108, 8, 4, 'Live with parents or family without paying rent', 'Live with parents or family without paying rent', 4),
  (108, 8, 5, 'Other', 'Other', 5);

-- INDUSTRY (109), en-AU
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (109, 8, 1, 'Advertising and marketing', 'Advertising and marketing', 1),
  (109, 8, 2, 'Agriculture, forestry and fishing', 'Agriculture, forestry and fishing', 2),
  (109, 8, 3, 'Automotive', 'Automotive', 3),
  (109, 8, 4, 'Banking and financial services', 'Banking and financial services', 4),
  (109, 8, 5, 'Construction', 'Construction', 5),
  (109, 8, 6, 'Education', 'Education', 6),
  (109, 8, 7, 'Energy and utilities', 'Energy and utilities', 7),
  (109, 8, 8, 'Government and public administration', 'Government and public administration', 8),
  (109, 8, 9, 'Healthcare', 'Healthcare', 9),
  (109, 8, 10, 'Hospitality and tourism', 'Hospitality and tourism', 10),
  (109, 8, 11, 'Information technology', 'Information technology', 11),
  (109, 8, 12, 'Insurance', 'Insurance', 12),
  (109, 8, 13, 'Legal services', 'Legal services', 13),
  (109, 8, 14, 'Manufacturing', 'Manufacturing', 14),
  (109, 8, 15, 'Market research', 'Market research', 15),
  (109, 8, 16, 'Media and entertainment', 'Media and entertainment', 16),
  (109, 8, 17, 'Non-profit', 'Non-profit', 17),
  (109, 8, 18, 'Pharmaceuticals and biotechnology', 'Pharmaceuticals and biotechnology', 18),
  (109, 8, 19, 'Real estate', 'Real estate', 19),
  (109, 8, 20, 'Retail', 'Retail', 20),
  (109, 8, 21, 'Telecommunications', 'Telecommunications', 21),
  (109, 8, 22, 'Transportation and logistics', 'Transportation and logistics', 22),
  (109, 8, 23, 'Other', 'Other', 23),
  (109, 8, 24, 'I am not currently working', 'I am not currently working', 24);

-- DEVICES_OWNED (110), en-AU
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (110, 8, 1, 'Smartphone', 'Smartphone', 1),
  (110, 8, 2, 'Tablet', 'Tablet', 2),
  (110, 8, 3, 'Laptop computer', 'Laptop computer', 3),
  (110, 8, 4, 'Desktop computer', 'Desktop computer', 4),
  (110, 8, 5, 'Smart TV', 'Smart TV', 5),
  (110, 8, 6, 'Streaming device (e.g. Roku, Apple TV, Chromecast)', 'Streaming device (e.g. Roku, Apple TV, Chromecast)', 6),
  (110, 8, 7, 'Video game console', 'Video game console', 7),
  (110, 8, 8, 'Smartwatch or fitness tracker', 'Smartwatch or fitness tracker', 8),
  (110, 8, 9, 'Smart speaker (e.g. Amazon Echo, Google Nest)', 'Smart speaker (e.g. Amazon Echo, Google Nest)', 9),
  (110, 8, 10, 'E-reader', 'E-reader', 10),
  (110, 8, 11, 'Virtual reality headset', 'Virtual reality headset', 11),
  (110, 8, 12, 'None of these', 'None of these', 12);

-- PETS (111), en-AU
INSERT INTO qualification_answers (question_id, country_language_id, pre_code, option_text, en_translation, position) VALUES
  (111, 8, 1, 'Dog', 'Dog', 1),
  (111, 8, 2, 'Cat', 'Cat', 2),
  (111, 8, 3, 'Fish', 'Fish', 3),
  (111, 8, 4, 'Bird', 'Bird', 4),
  (111, 8, 5, 'Small mammal (e.g. rabbit, hamster, guinea pig)', 'Small mammal (e.g. rabbit, hamster, guinea pig)', 5),
  (111, 8, 6, 'Reptile or amphibian', 'Reptile or amphibian', 6),
  (111, 8, 7, 'Horse', 'Horse', 7),
  (111, 8, 8, 'Other pet', 'Other pet', 8),
  (111, 8, 9, 'No pets', 'No pets', 9);

-- Rate card ----------------------------------------------------------------
-- cpi_cents for a campaign with length_of_interview L (minutes) and incidence I (%):
-- the row with the smallest loi_max >= L and the largest incidence_min <= I.
-- The grid is complete (every loi_max x incidence_min), so every L in 1..120 and
-- I in 1..100 is priced. Longer interviews and lower incidence cost more.
INSERT INTO rate_card (loi_max, incidence_min, cpi_cents) VALUES
  (5, 1, 290), (5, 5, 240), (5, 10, 195), (5, 20, 140), (5, 30, 110), (5, 50, 90), (5, 75, 75),
  (10, 1, 385), (10, 5, 320), (10, 10, 260), (10, 20, 190), (10, 30, 150), (10, 50, 120), (10, 75, 100),
  (15, 1, 500), (15, 5, 415), (15, 10, 340), (15, 20, 245), (15, 30, 195), (15, 50, 155), (15, 75, 130),
  (20, 1, 615), (20, 5, 510), (20, 10, 415), (20, 20, 305), (20, 30, 240), (20, 50, 190), (20, 75, 160),
  (30, 1, 845), (30, 5, 705), (30, 10, 570), (30, 20, 420), (30, 30, 330), (30, 50, 265), (30, 75, 220),
  (45, 1, 1155), (45, 5, 960), (45, 10, 780), (45, 20, 570), (45, 30, 450), (45, 50, 360), (45, 75, 300),
  (60, 1, 1540), (60, 5, 1280), (60, 10, 1040), (60, 20, 760), (60, 30, 600), (60, 50, 480), (60, 75, 400),
  (120, 1, 2500), (120, 5, 2080), (120, 10, 1690), (120, 20, 1235), (120, 30, 975), (120, 50, 780), (120, 75, 650);
